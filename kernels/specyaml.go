package kernels

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"
)

// specFile is the on-disk YAML shape of a spec, before resolution.
type specFile struct {
	Name        string `yaml:"name"`
	NameLine    int    `yaml:"-"`
	Description string `yaml:"description"`
	Base        struct {
		Tarball string `yaml:"tarball"`
		Package string `yaml:"package"`
		Suite   string `yaml:"suite"`
		Tree    string `yaml:"tree"`
		Git     string `yaml:"git"`
		Rev     string `yaml:"rev"`
	} `yaml:"base"`
	BaseLine int `yaml:"-"`
	Config   struct {
		Base      located   `yaml:"base"`
		Fragments []located `yaml:"fragments"`
		Selftests []string  `yaml:"selftests"`
	} `yaml:"config"`
	Patches []located `yaml:"patches"`
	Cmdline []string  `yaml:"cmdline"`
	Modes   []located `yaml:"modes"`
	Extends located   `yaml:"extends"`
}

// located is a YAML string that remembers its line, for error messages.
type located struct {
	Value string
	Line  int
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (l *located) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a string", n.Line)}}
	}
	l.Value, l.Line = n.Value, n.Line
	return nil
}

var (
	yamlLineRe = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRe  = regexp.MustCompile(`^field (\S+) not found in type `)
)

// decodeSpec strictly decodes a spec file; errors name the file and line.
func decodeSpec(path string, data []byte) (*specFile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f specFile
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &SpecError{Path: path, Msg: "empty spec"}
		}
		return nil, yamlError(path, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err == nil {
		f.NameLine = keyLine(&root, "name")
		f.BaseLine = keyLine(&root, "base")
	}
	return &f, nil
}

// keyLine returns the line of a top-level key, or 0.
func keyLine(root *yaml.Node, key string) int {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return 0
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return 0
}

// yamlError rewrites yaml.v3's "line N: ..." messages as SpecErrors.
func yamlError(path string, err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	var errs *multierror.Error
	for _, msg := range msgs {
		se := &SpecError{Path: path, Msg: msg}
		if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
			se.Line, _ = strconv.Atoi(m[1])
			se.Msg = m[2]
		}
		if m := unknownRe.FindStringSubmatch(se.Msg); m != nil {
			se.Msg = fmt.Sprintf("unknown field %q", m[1])
		}
		errs = multierror.Append(errs, se)
	}
	return flatten(errs)
}
