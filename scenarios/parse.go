package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"
)

// Open reads, substitutes parameters in, parses and validates a scenario
// file. params override the file's own parameter defaults.
func Open(path string, params map[string]string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, params)
}

// Parse is Open on bytes; name is used in error messages.
func Parse(name string, data []byte, params map[string]string) (*Scenario, error) {
	errs := &multierror.Error{ErrorFormat: listErrors}
	add := func(line int, format string, args ...any) {
		errs = multierror.Append(errs, fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	text, err := substitute(data, params, add)
	if err != nil {
		return nil, yamlError(name, err)
	}
	if errs.ErrorOrNil() != nil {
		return nil, errs
	}
	var root yaml.Node
	if err := yaml.Unmarshal(text, &root); err != nil {
		return nil, yamlError(name, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: empty scenario", name)
	}
	checkKnown(root.Content[0], reflect.TypeOf(Scenario{}), "", add)
	s := &Scenario{Path: name, Source: text}
	if err := root.Content[0].Decode(s); err != nil {
		var te *yaml.TypeError
		var pe *posError
		switch {
		case errors.As(err, &pe):
			add(pe.line, "%s", pe.msg)
		case errors.As(err, &te):
			for _, e := range te.Errors {
				var line int
				if _, serr := fmt.Sscanf(e, "line %d:", &line); serr == nil {
					e = strings.TrimSpace(e[strings.IndexByte(e, ':')+1:])
				}
				add(line, "%s", e)
			}
		default:
			add(0, "%v", err)
		}
	}
	if errs.ErrorOrNil() != nil {
		return nil, errs
	}
	s.setDefaults()
	s.validate(add)
	if err := errs.ErrorOrNil(); err != nil {
		return nil, err
	}
	return s, nil
}

// yamlError turns "yaml: line 3: msg" into "name:3: msg".
func yamlError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, serr := fmt.Sscanf(msg, "line %d:", &line); serr == nil {
		return fmt.Errorf("%s:%d:%s", name, line, msg[strings.IndexByte(msg, ':')+1:])
	}
	return fmt.Errorf("%s: %s", name, msg)
}

func listErrors(es []error) string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

var paramRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// substitute replaces ${name} with the parameter's value: the override if
// given, else the file's params default.
func substitute(data []byte, overrides map[string]string, add func(int, string, ...any)) ([]byte, error) {
	var head struct {
		Params map[string]string `yaml:"params"`
	}
	// A first, lenient parse only to read the defaults; references become
	// plain words so that they parse anywhere.
	if err := yaml.Unmarshal(paramRef.ReplaceAll(data, []byte("_$1_")), &head); err != nil {
		return nil, err
	}
	values := map[string]string{}
	for k, v := range head.Params {
		values[k] = v
	}
	var unknown []string
	for k, v := range overrides {
		if _, ok := head.Params[k]; !ok {
			unknown = append(unknown, k)
		}
		values[k] = v
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("parameter %s is not declared under params: (declared: %s)",
			strings.Join(unknown, ", "), strings.Join(sortedKeys(head.Params), ", "))
	}
	var out bytes.Buffer
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
			continue
		}
		out.Write(paramRef.ReplaceAllFunc(line, func(m []byte) []byte {
			name := string(m[2 : len(m)-1])
			v, ok := values[name]
			if !ok {
				add(i+1, "undefined parameter ${%s} (declare it under params:)", name)
				return m
			}
			return []byte(v)
		}))
	}
	return out.Bytes(), nil
}

var unmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// checkKnown reports mapping keys that no field of t takes, with their line.
func checkKnown(n *yaml.Node, t reflect.Type, where string, add func(int, string, ...any)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && reflect.PointerTo(t).Implements(unmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // the decoder reports the type error
		}
		fields := map[string]reflect.Type{}
		collectFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				add(k.Line, "unknown field %q%s%s", k.Value, in(where), suggest(k.Value, fields))
				continue
			}
			checkKnown(v, ft, k.Value, add)
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				checkKnown(c, t.Elem(), where, add)
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 1; i < len(n.Content); i += 2 {
				checkKnown(n.Content[i], t.Elem(), n.Content[i-1].Value, add)
			}
		}
	}
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

// suggest names the closest known field, or lists them all.
func suggest(key string, fields map[string]reflect.Type) string {
	names := sortedKeys(fields)
	best, bestD := "", 3
	for _, n := range names {
		if d := distance(key, n); d < bestD {
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

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
