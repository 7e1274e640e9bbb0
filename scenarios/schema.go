package scenarios

import (
	"encoding/json"

	"github.com/invopop/jsonschema"

	"napilab/results/metrics"
)

// Schema returns a JSON Schema of the scenario format, generated from the
// same Go types the parser decodes into, for editors (yaml-language-server).
func Schema() ([]byte, error) {
	r := &jsonschema.Reflector{FieldNameTag: "yaml", DoNotReference: false, AllowAdditionalProperties: false,
		RequiredFromJSONSchemaTags: true}
	s := r.Reflect(&Scenario{})
	for name, d := range s.Definitions {
		s.Definitions[name] = allowRefs(d)
	}
	s.Title = "napilab scenario"
	s.Description = "A napilab scenario: machine, topology, loads, timeline and assertions."
	return json.MarshalIndent(s, "", "  ")
}

// refSchema is a parameter reference, which a field of any type may hold
// (the field takes the parameter's value).
var refSchema = &jsonschema.Schema{Type: "string", Pattern: `^\$\{[A-Za-z_][A-Za-z0-9_]*\}$`,
	Description: "a parameter reference: ${name}, declared under params:"}

// allowRefs lets every typed value below s (a number, a boolean, a
// duration, a name from a list, a list) be a parameter reference instead.
func allowRefs(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil || s == jsonschema.TrueSchema || s == jsonschema.FalseSchema {
		return s
	}
	if s.Properties != nil {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			p.Value = allowRefs(p.Value)
		}
	}
	s.Items = allowRefs(s.Items)
	s.AdditionalProperties = allowRefs(s.AdditionalProperties)
	for _, alt := range append(s.OneOf, s.AnyOf...) {
		if alt.Properties != nil {
			allowRefs(alt) // an alternative's fields; the alternative is wrapped with s
		}
	}
	plainString := s.Type == "string" && s.Pattern == "" && s.Enum == nil
	if s.Ref != "" || s.Type == "object" || plainString || (s.Type == "" && s.OneOf == nil && s.AnyOf == nil) {
		return s
	}
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{s, refSchema}, Description: s.Description}
}

// JSONSchema describes a duration.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
		Description: "a Go duration: 100ms, 1.5s, 1m", Examples: []any{"100ms", "10s"}}
}

// JSONSchema describes one name or a list of names.
func (StringList) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "string"}, {Type: "array", Items: &jsonschema.Schema{Type: "string"}}}}
}

// JSONSchema describes "host" or a guest endpoint.
func (Endpoint) JSONSchema() *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set("netns", &jsonschema.Schema{Type: "string", Description: "guest network namespace, empty = root"})
	props.Set("address", &jsonschema.Schema{Type: "string", Description: "guest address the sink listens on"})
	props.Set("nic", &jsonschema.Schema{Type: "string", Description: "the sink listens on this NIC's address"})
	props.Set("port", &jsonschema.Schema{Type: "integer", Minimum: json.Number("1"), Maximum: json.Number("65535")})
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "string", Enum: []any{"host"}, Description: "the host, through the NIC's tap"},
		{Type: "object", Properties: props, AdditionalProperties: jsonschema.FalseSchema},
	}}
}

// JSONSchema describes a poll context or a mapping of written values to contexts.
func (PollContext) JSONSchema() *jsonschema.Schema {
	ctx := &jsonschema.Schema{Type: "string", Enum: []any{}}
	for _, c := range metrics.PollContexts {
		ctx.Enum = append(ctx.Enum, c)
	}
	return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		ctx, {Type: "object", AdditionalProperties: ctx, Description: "the context expected after each value the each: step writes"}}}
}
