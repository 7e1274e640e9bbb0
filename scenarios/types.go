package scenarios

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as "100ms", "10s", "1m".
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return typeError(n, "bad duration %q: want a number with a unit, like 100ms or 10s", n.Value)
	}
	if v < 0 {
		return typeError(n, "negative duration %q", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// StringList accepts a single string or a list of strings.
type StringList []string

// UnmarshalYAML accepts "a" or [a, b].
func (l *StringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = StringList{n.Value}
		return nil
	}
	var s []string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*l = s
	return nil
}

// UnmarshalYAML accepts "host" or a mapping.
func (e *Endpoint) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "host" {
			return typeError(n, "endpoint %q: want \"host\" or a mapping like {netns: peer}", n.Value)
		}
		*e = Endpoint{Host: true}
		return nil
	}
	type raw Endpoint
	return n.Decode((*raw)(e))
}

// The position-recording unmarshalers below keep each item's line for errors.

// UnmarshalYAML records the line.
func (s *Step) UnmarshalYAML(n *yaml.Node) error {
	type raw Step
	s.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(s))
}

// UnmarshalYAML records the line.
func (a *Assert) UnmarshalYAML(n *yaml.Node) error {
	type raw Assert
	a.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(a))
}

// UnmarshalYAML records the line.
func (x *NIC) UnmarshalYAML(n *yaml.Node) error {
	type raw NIC
	x.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(x))
}

// UnmarshalYAML records the line.
func (v *Veth) UnmarshalYAML(n *yaml.Node) error {
	type raw Veth
	v.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(v))
}

// UnmarshalYAML records the line.
func (r *Route) UnmarshalYAML(n *yaml.Node) error {
	type raw Route
	r.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(r))
}

// UnmarshalYAML records the line.
func (l *Load) UnmarshalYAML(n *yaml.Node) error {
	type raw Load
	l.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(l))
}

// UnmarshalYAML records the line.
func (s *Sampler) UnmarshalYAML(n *yaml.Node) error {
	type raw Sampler
	s.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(s))
}

// typeError reports a bad value so that decoding goes on and every problem
// is reported in one pass (yaml.v3 keeps going after *yaml.TypeError).
func typeError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d:%d: ", n.Line, n.Column) + fmt.Sprintf(format, args...)}}
}
