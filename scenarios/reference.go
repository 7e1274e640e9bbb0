package scenarios

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"napilab/results/metrics"
	"napilab/results/model"
)

// Reference writes the generated part of docs/scenarios.md: every action's,
// load's and assertion's fields (from the schema, the same Go types the
// parser decodes into), an example of each assertion kind from the shipped
// scenarios in shipped (file:line), every metric family and the invariants.
func Reference(w io.Writer, shipped string) error {
	b, err := Schema()
	if err != nil {
		return err
	}
	var doc schemaDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	step := doc.Defs["Step"]
	fmt.Fprint(w, "### Actions\n\nA step holds exactly one action; `name`, the repetition (`every` with `for` or `count`, `jitter`), `deadline` and `tolerate` go beside it.\n\n")
	fmt.Fprintln(w, "| action | fields |\n|---|---|")
	for _, a := range Actions {
		fmt.Fprintf(w, "| `%s` | %s |\n", a, doc.fields(step.Properties[a]))
	}
	fmt.Fprintf(w, "\nStep: %s\n", doc.fields(schemaRef{Ref: "#/$defs/Step"}, Actions...))
	fmt.Fprintln(w, "\n### Loads\n\n| field | type |\n|---|---|")
	load := doc.Defs["Load"]
	for _, f := range sortedKeys(load.Properties) {
		fmt.Fprintf(w, "| `%s` | %s |\n", f, doc.typeOf(load.Properties[f]))
	}
	examples := assertExamples(shipped)
	assert := doc.Defs["Assert"]
	fmt.Fprintln(w, "\n### Assertions\n\nAn assertion holds exactly one kind; `name`, and a window (`during` or `each` with `within`) for grows, delta, rate, ratio and polls, go beside it.")
	for _, k := range AssertKinds {
		fmt.Fprintf(w, "\n#### `%s`\n\nFields: %s\n", k, doc.fields(assert.Properties[k]))
		if ex, ok := examples[k]; ok {
			fmt.Fprintf(w, "\nFrom `%s`:\n\n```yaml\n%s```\n", ex.where, ex.text)
		}
	}
	fmt.Fprintln(w, "\n### Metrics\n\n| metric | read from | unit | meaning |\n|---|---|---|---|")
	for _, d := range metrics.Known {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", d.Pattern, d.File, d.Unit, strings.ReplaceAll(d.Meaning, "|", "\\|"))
	}
	fmt.Fprintln(w, "\n### Invariants\n\nChecked in every run unless `invariants: off:` gives a reason.\n\n| invariant | bound | rule |\n|---|---|---|")
	for _, r := range model.Rules {
		fmt.Fprintf(w, "| `%s` | %s | %s |\n", r.Name, r.Bound(), strings.ReplaceAll(r.Doc, "|", "\\|"))
	}
	return nil
}

type schemaRef struct {
	Ref   string      `json:"$ref"`
	Type  string      `json:"type"`
	AnyOf []schemaRef `json:"anyOf"`
	OneOf []schemaRef `json:"oneOf"`
	Items *schemaRef  `json:"items"`
	Enum  []any       `json:"enum"`
}

type schemaDef struct {
	Properties map[string]schemaRef `json:"properties"`
}

type schemaDoc struct {
	Defs map[string]schemaDef `json:"$defs"`
}

// fields lists a definition's fields with their types.
func (d schemaDoc) fields(r schemaRef, skip ...string) string {
	def, ok := d.Defs[strings.TrimPrefix(d.deref(r).Ref, "#/$defs/")]
	if !ok || len(def.Properties) == 0 {
		return d.typeOf(r)
	}
	var out []string
	for _, f := range sortedKeys(def.Properties) {
		if !slices.Contains(skip, f) {
			out = append(out, fmt.Sprintf("`%s` (%s)", f, d.typeOf(def.Properties[f])))
		}
	}
	return strings.Join(out, ", ")
}

// deref skips the parameter-reference alternative around a type.
func (d schemaDoc) deref(r schemaRef) schemaRef {
	if len(r.AnyOf) == 2 && r.AnyOf[1].Type == "string" {
		return r.AnyOf[0]
	}
	return r
}

// typeOf names a field's type the way authors write it.
func (d schemaDoc) typeOf(r schemaRef) string {
	r = d.deref(r)
	switch {
	case r.Ref != "":
		name := strings.TrimPrefix(r.Ref, "#/$defs/")
		switch name {
		case "Duration":
			return "duration"
		case "Percent":
			return "percentage"
		case "StringList":
			return "name or list"
		case "Endpoint":
			return "host or {netns, address, nic, port}"
		case "PollContext":
			return "context or {value: context}"
		}
		return "mapping"
	case len(r.Enum) > 0:
		var vs []string
		for _, v := range r.Enum {
			vs = append(vs, fmt.Sprint(v))
		}
		return strings.Join(vs, "\\|")
	case r.Type == "array" && r.Items != nil:
		return "list of " + d.typeOf(*r.Items)
	case r.Type != "":
		return r.Type
	}
	return "value"
}

type example struct{ where, text string }

// assertExamples finds the first assertion of each kind in the shipped
// scenarios, in file order.
func assertExamples(shipped string) map[string]example {
	out := map[string]example{}
	var files []string
	for _, dir := range []string{".", "seeds", "ab", "perf"} {
		f, _ := filepath.Glob(filepath.Join(shipped, dir, "*.yaml"))
		files = append(files, f...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
			continue
		}
		asserts := valueNode(doc.Content[0], "asserts")
		if asserts == nil {
			continue
		}
		lines := strings.Split(string(data), "\n")
		for i, a := range asserts.Content {
			for _, k := range AssertKinds {
				if _, seen := out[k]; seen || valueNode(a, k) == nil {
					continue
				}
				end := len(lines)
				if i+1 < len(asserts.Content) {
					end = asserts.Content[i+1].Line - 1
				}
				var text strings.Builder
				for _, l := range lines[a.Line-1 : end] {
					if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") && text.Len() > 0 {
						break
					}
					text.WriteString(l + "\n")
				}
				rel, _ := filepath.Rel(shipped, f)
				rel = filepath.Join("scenarios", rel)
				out[k] = example{where: fmt.Sprintf("%s:%d", rel, a.Line), text: text.String()}
			}
		}
	}
	return out
}
