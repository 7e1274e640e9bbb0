package scenarios

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"napilab/internal/suggest"
)

var (
	typeOfScenario = reflect.TypeOf(Scenario{})
	typeDuration   = reflect.TypeOf(Duration(0))
	typePercent    = reflect.TypeOf(Percent(0))
	typePollCtx    = reflect.TypeOf(PollContext{})
	unmarshaler    = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// renamedOn is what each field once called on: is called now.
var renamedOn = map[reflect.Type]string{
	reflect.TypeOf(GRO{}): "enabled:", reflect.TypeOf(XDP{}): "attached:",
	reflect.TypeOf(InjectStep{}): "armed:", reflect.TypeOf(Inject{}): "when: entry or return",
}

// checkKnown walks the document against the Go types: unknown keys and
// values of the wrong shape are reported with their line and column.
func checkKnown(n *yaml.Node, t reflect.Type, where string, c *collector) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if t.Kind() == reflect.Pointer && n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an optional value left unset (poll_cpu: null)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && paramRef.MatchString(n.Value) {
		return // an undefined parameter, already reported
	}
	if t == typeDuration {
		if _, err := time.ParseDuration(n.Value); err != nil || n.Kind != yaml.ScalarNode {
			c.at(n.Line, n.Column, "bad duration %q%s: want a number with a unit, like 100ms or 10s", n.Value, in(where))
		}
		return
	}
	if t == typePercent {
		if _, err := parsePercent(n.Value); err != nil || n.Kind != yaml.ScalarNode {
			c.at(n.Line, n.Column, "bad percentage %s%s: want a number above 0 with a %% sign, like 5%% or 12.5%%", shown(n), in(where))
		}
		return
	}
	if t == typePollCtx && n.Kind == yaml.MappingNode {
		t = reflect.TypeOf(PollContext{}.ByValue) // written value -> context
	}
	custom := reflect.PointerTo(t).Implements(unmarshaler)
	if custom && n.Kind == yaml.ScalarNode {
		return // the type's own parser checks scalars
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			c.at(n.Line, n.Column, "%s%s: want a mapping, got %s", shown(n), in(where), kindName(n))
			return
		}
		fields := map[string]reflect.Type{}
		collectFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok && k.Value == "on" && renamedOn[t] != "" {
				c.at(k.Line, k.Column, "on:%s is read as true by YAML 1.1 tools (PyYAML, yamllint): write %s", in(where), renamedOn[t])
				continue
			}
			if !ok {
				c.at(k.Line, k.Column, "unknown field %q%s%s", k.Value, in(where), didYouMean(k.Value, fields))
				if c.unknownIn == nil {
					c.unknownIn = map[Pos]bool{}
				}
				c.unknownIn[c.files.resolve(n.Line, n.Column)] = true
				continue
			}
			checkKnown(v, ft, k.Value, c)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			if !custom {
				c.at(n.Line, n.Column, "%s%s: want a list, got %s", shown(n), in(where), kindName(n))
			} else if n.Kind == yaml.MappingNode {
				c.at(n.Line, n.Column, "%s%s: want a string or a list, got %s", shown(n), in(where), kindName(n))
			}
			return
		}
		for _, e := range n.Content {
			checkKnown(e, t.Elem(), where, c)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.at(n.Line, n.Column, "%s%s: want a mapping, got %s", shown(n), in(where), kindName(n))
			return
		}
		for i := 1; i < len(n.Content); i += 2 {
			checkKnown(n.Content[i], t.Elem(), n.Content[i-1].Value, c)
		}
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64, reflect.Bool:
		want := map[reflect.Kind]string{reflect.Int: "an integer", reflect.Int64: "an integer", reflect.Uint64: "a non-negative integer",
			reflect.Float64: "a number", reflect.Bool: "true or false"}[t.Kind()]
		ok := n.Kind == yaml.ScalarNode
		switch t.Kind() {
		case reflect.Bool:
			ok = ok && n.Tag == "!!bool"
		case reflect.Float64:
			ok = ok && (n.Tag == "!!int" || n.Tag == "!!float")
		default:
			ok = ok && n.Tag == "!!int" && !(t.Kind() == reflect.Uint64 && strings.HasPrefix(n.Value, "-"))
		}
		if !ok {
			c.at(n.Line, n.Column, "%s%s: want %s", shown(n), in(where), want)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			c.at(n.Line, n.Column, "%s%s: want a string, got %s", shown(n), in(where), kindName(n))
		}
	}
}

func shown(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%q", n.Value)
	}
	return kindName(n)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a scalar"
}

func in(where string) string {
	if where == "" {
		return ""
	}
	return " in " + where
}

func collectFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported():
		case opts == "inline":
			collectFields(f.Type, out)
		case name != "":
			out[name] = f.Type
		}
	}
}

// didYouMean names the closest known field, or lists them all.
func didYouMean(key string, fields map[string]reflect.Type) string {
	names := sortedKeys(fields)
	best, bestD := "", 3
	for _, n := range names {
		if abs(len(key)-len(n)) >= bestD {
			continue // the distance is at least that: a long key costs nothing
		}
		if d := suggest.Distance(key, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return " (known: " + strings.Join(names, ", ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
