package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Open reads a scenario file and the fragments it includes, substitutes
// parameters, parses and validates it. params override the files' defaults.
// All problems are reported at once, as Errors with file:line:col.
func Open(path string, params map[string]string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Not safefs.ReadRegular: lab run <(generator) is a pipe.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: over %d bytes, too large for a scenario", path, MaxFileSize)
	}
	return Parse(path, data, params)
}

// Parse is Open on bytes; name is the file name used for errors and to
// resolve includes.
func Parse(name string, data []byte, params map[string]string) (*Scenario, error) {
	c := &collector{}
	srcs, err := loadTree(name, data, c)
	if err != nil {
		return nil, err
	}
	values, err := paramValues(srcs, params)
	if err != nil {
		return nil, err
	}
	presets := mergePresets(srcs)
	if err := applyPresets(name, presets, values, params); err != nil {
		return nil, err
	}
	var root *yaml.Node
	for _, src := range srcs { // the main file first; fragments merge into it
		doc := src.doc
		if doc == nil {
			continue
		}
		sub := substitution{values: values, size: len(src.data), limit: MaxExpandedSize, parsed: map[string]*yaml.Node{},
			undefined: func(n *yaml.Node, name string) {
				c.add(Pos{File: src.name, Line: n.Line, Col: n.Column}, "undefined parameter ${%s} (declare it under params:)", name)
			}}
		if !sub.node(doc) {
			return nil, errTooLarge(src.name)
		}
		offset(doc, src.index*lineStride)
		if root == nil {
			root = doc
		} else {
			merge(doc, root)
		}
	}
	if root == nil {
		return nil, fmt.Errorf("%s: empty scenario", name)
	}
	if !checkExpansion(root, c) {
		return nil, c.err()
	}
	checkKnown(root, typeOfScenario, "", c)
	s := &Scenario{Path: name, namePos: Pos{File: name, Line: 1, Col: 1}, Chosen: chosen(presets, values)}
	s.written.loads, s.written.steps = writtenNames(root)
	if t := valueNode(root, "timeline"); t != nil {
		s.written.steps[""] = len(t.Content) > 0 // the timeline has items, decoded or not
	}
	s.root = root
	if k := keyNode(root, "name"); k != nil {
		s.namePos = c.files.resolve(k.Line, k.Column)
	}
	if err := root.Decode(s); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, e := range te.Errors {
			if m := typeErrorLine.FindStringSubmatch(e); m != nil {
				line, _ := strconv.Atoi(m[1])
				col, _ := strconv.Atoi(m[2])
				if !c.reported(line) {
					c.at(line, col, "%s", m[3])
				}
				continue
			}
			c.add(Pos{File: name}, "%s", e)
		}
	}
	s.Includes = srcs.names()[1:]
	if k := keyNode(root, "perf"); k != nil && s.Perf == nil {
		c.at(k.Line, k.Column, "perf is empty: it needs budgets:")
	}
	s.dropEmpty(c)
	defaultDeadline(root, c)
	s.resolvePositions(c.files)
	s.setDefaults()
	s.validate(c, values)
	if err := c.err(); err != nil {
		return nil, err
	}
	// The resolved scenario stands alone: its includes are merged in.
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "include" {
			root.Content = append(root.Content[:i], root.Content[i+2:]...)
			break
		}
	}
	s.Source, _ = yaml.Marshal(root)
	s.MeasureHash = measureHash(root)
	s.Warnings = c.warnings()
	return s, nil
}

// source is one file of a scenario: the main file or an included fragment.
type source struct {
	name    string
	index   int
	data    []byte
	doc     *yaml.Node // the file's top node, nil when the file is empty
	params  map[string]string
	presets Presets
}

type sources []*source

func (ss sources) names() []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.name
	}
	return out
}

// loadTree reads the main file's and, recursively, the included files'
// params and include lists.
func loadTree(name string, data []byte, c *collector) (sources, error) {
	roots := includeRoots(name)
	var out sources
	seen := map[string]bool{}
	var visit func(name string, data []byte, chain []string) error
	visit = func(name string, data []byte, chain []string) error {
		abs, _ := filepath.Abs(name)
		if seen[abs] {
			return nil // included twice from different places: once is enough
		}
		seen[abs] = true
		if err := checkUTF8(name, data); err != nil {
			return err
		}
		var file yaml.Node
		if err := yaml.Unmarshal(data, &file); err != nil {
			return yamlError(name, data, err)
		}
		var doc *yaml.Node
		var head struct {
			Params     map[string]string `yaml:"params"`
			Include    []yaml.Node       `yaml:"include"`
			presetHead `yaml:",inline"`
		}
		if len(file.Content) > 0 {
			doc = file.Content[0]
			if err := doc.Decode(&head); err != nil {
				return yamlError(name, data, err)
			}
		}
		presets, err := head.decode(name)
		if err != nil {
			return err
		}
		src := &source{name: name, index: len(out), data: data, doc: doc, params: head.Params, presets: presets}
		out = append(out, src)
		c.files = append(c.files, name)
		for _, inc := range head.Include {
			p, b, err := roots.read(name, inc)
			if err != nil {
				return err
			}
			pabs, _ := filepath.Abs(p)
			if slices.Contains(append(chain, abs), pabs) {
				return Errors{{Pos: Pos{File: name, Line: inc.Line, Col: inc.Column},
					Msg: fmt.Sprintf("include cycle: %s", strings.Join(append(out.names(), p), " -> "))}}
			}
			if err := visit(p, b, append(chain, abs)); err != nil {
				return err
			}
		}
		return nil
	}
	return out, visit(name, data, nil)
}

// paramValues merges the declared defaults (the main file wins over its
// includes) with the overrides, which must name declared parameters.
func paramValues(srcs sources, overrides map[string]string) (map[string]string, error) {
	values := map[string]string{}
	for k := len(srcs) - 1; k >= 0; k-- {
		for n, v := range srcs[k].params {
			values[n] = v
		}
	}
	var unknown []string
	for n := range overrides {
		if _, ok := values[n]; !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s: parameter %s is not declared under params: (declared: %s)",
			srcs[0].name, strings.Join(unknown, ", "), strings.Join(sortedKeys(values), ", "))
	}
	for n, v := range overrides {
		values[n] = v
	}
	return values, nil
}

var (
	paramRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	// flowRef is an unquoted reference in a flow collection: not YAML.
	flowRef = regexp.MustCompile(`^[^#]*[{\[][^#"']*(?:[{\[,:]\s*)(\$\{[A-Za-z_][A-Za-z0-9_]*\})`)
)

// substitution replaces parameter references in a file's nodes. A scalar
// that is exactly one reference, quoted or not, takes the value as YAML
// (min: "${queues}" is the number 2 when queues is 2); a reference inside a
// longer scalar is text, and an unquoted scalar is typed again once
// substituted (rate: ${k}000). It gives up (false) once the file would pass
// limit bytes: a thousand references to a long value are a large file.
type substitution struct {
	values      map[string]string
	size, limit int
	parsed      map[string]*yaml.Node // each value parsed once
	undefined   func(n *yaml.Node, name string)
}

func (s *substitution) node(n *yaml.Node) bool {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		if !s.scalar(n) {
			return false
		}
	}
	for _, c := range n.Content {
		if !s.node(c) {
			return false
		}
	}
	return true
}

func (s *substitution) scalar(n *yaml.Node) bool {
	if m := paramRef.FindStringSubmatchIndex(n.Value); m != nil && m[0] == 0 && m[1] == len(n.Value) {
		name := n.Value[m[2]:m[3]]
		v, ok := s.values[name]
		if !ok {
			s.undefined(n, name)
			return true
		}
		if s.size += len(v) - len(n.Value); s.size > s.limit {
			return false
		}
		val := s.value(name, v)
		line, col := n.Line, n.Column
		*n = *copyAt(val, line, col)
		return true
	}
	out := paramRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := s.values[name]
		if !ok {
			s.undefined(n, name)
			return ref
		}
		s.size += len(v) - len(ref)
		return v
	})
	if s.size > s.limit {
		return false
	}
	n.Value = out
	if n.Style == 0 { // typed by its new text
		n.Tag = "!!str"
		var doc yaml.Node
		if yaml.Unmarshal([]byte(out), &doc) == nil && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.ScalarNode {
			n.Tag = doc.Content[0].Tag
		}
	}
	return true
}

// value parses a parameter's value as YAML: a number, a duration, a list.
// A value that is not one YAML node is a string.
func (s *substitution) value(name, v string) *yaml.Node {
	if n, ok := s.parsed[name]; ok {
		return n
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: v, Tag: "!!str"}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(v), &doc); err == nil && len(doc.Content) == 1 {
		n = doc.Content[0]
		n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	} else if v == "" {
		n.Tag = "!!null"
	}
	s.parsed[name] = n
	return n
}

// copyAt deep-copies n with every node at line:col, where the reference was.
func copyAt(n *yaml.Node, line, col int) *yaml.Node {
	c := *n
	c.Line, c.Column = line, col
	c.Content = nil
	for _, ch := range n.Content {
		c.Content = append(c.Content, copyAt(ch, line, col))
	}
	return &c
}

// checkUTF8 reports the first byte of data that is not UTF-8.
func checkUTF8(name string, data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return Errors{{Pos: Pos{File: name, Line: line, Col: col}, Msg: fmt.Sprintf("byte 0x%02x is not UTF-8: scenario files are UTF-8 text", data[i])}}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return nil
}

// typeErrorLine is a decoding error of yaml.v3 ("line 3: ...") or of the
// lab's own types ("line 3:7: ...", typeError).
var typeErrorLine = regexp.MustCompile(`^line (\d+)(?::(\d+))?: (?s)(.*)$`)

// writtenNames lists the loads and the named steps the document declares.
func writtenNames(root *yaml.Node) (loads, steps map[string]bool) {
	loads, steps = map[string]bool{}, map[string]bool{}
	if l := valueNode(root, "loads"); l != nil {
		for i := 0; l.Kind == yaml.MappingNode && i+1 < len(l.Content); i += 2 {
			loads[l.Content[i].Value] = true
		}
	}
	var walk func(items *yaml.Node)
	walk = func(items *yaml.Node) {
		if items == nil || items.Kind != yaml.SequenceNode {
			return
		}
		for _, st := range items.Content {
			if n := valueNode(st, "name"); n != nil && n.Kind == yaml.ScalarNode {
				steps[n.Value] = true
			}
			walk(valueNode(st, "parallel"))
		}
	}
	walk(valueNode(root, "timeline"))
	return loads, steps
}

// defaultDeadline checks defaults.deadline where it is written: 0 would
// otherwise become the default (10s) without a word.
func defaultDeadline(root *yaml.Node, c *collector) {
	d := valueNode(root, "defaults")
	if d == nil {
		return
	}
	if n := valueNode(d, "deadline"); n != nil {
		v, err := time.ParseDuration(n.Value)
		switch {
		case err != nil: // checkKnown said so
		case v == 0:
			c.at(n.Line, n.Column, "defaults.deadline %s: there is no \"no deadline\"; omit it for the default %v, or give at least %v", n.Value, DefaultDeadline, MinDeadline)
		case v < MinDeadline:
			c.at(n.Line, n.Column, "defaults.deadline %v: below %v a step is a hang before it could finish", v, MinDeadline)
		case v > MaxSpan:
			c.at(n.Line, n.Column, "defaults.deadline %v: longer than a run may last (%v)", v, MaxSpan)
		}
	}
}

// offset shifts every node's line so positions identify their file.
func offset(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		offset(c, by)
	}
}

// merge folds a fragment into dst: new keys are added, mappings merge,
// sequences concatenate (fragment items first), dst's scalars win.
func merge(frag, dst *yaml.Node) {
	if frag.Kind != yaml.MappingNode || dst.Kind != yaml.MappingNode {
		return
	}
	index := map[string]int{}
	for i := 0; i+1 < len(dst.Content); i += 2 {
		index[dst.Content[i].Value] = i
	}
	for i := 0; i+1 < len(frag.Content); i += 2 {
		k, v := frag.Content[i], frag.Content[i+1]
		if k.Value == "include" || k.Value == "name" || k.Value == "description" {
			continue
		}
		j, ok := index[k.Value]
		if !ok {
			dst.Content = append(dst.Content, k, v)
			continue
		}
		d := dst.Content[j+1]
		switch {
		case d.Kind == yaml.MappingNode && v.Kind == yaml.MappingNode:
			merge(v, d)
		case d.Kind == yaml.SequenceNode && v.Kind == yaml.SequenceNode:
			d.Content = append(append([]*yaml.Node{}, v.Content...), d.Content...)
		}
	}
}

// yamlError turns "yaml: line 3: msg" into "name:3: msg"; on a line with
// a parameter reference inside {...} or [...] it says how to write one.
func yamlError(name string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, serr := fmt.Sscanf(msg, "line %d:", &line); serr == nil {
		msg = strings.TrimSpace(msg[strings.IndexByte(msg, ':')+1:])
		for _, l := range []int{line, line + 1, line - 1, line - 2} { // yaml names a line near the fault
			if m := flowRef.FindStringSubmatchIndex(lineOf(data, l)); m != nil {
				ref := lineOf(data, l)[m[2]:m[3]]
				return Errors{{Pos: Pos{File: name, Line: l, Col: m[2] + 1},
					Msg: fmt.Sprintf("a parameter reference inside {...} or [...] is quoted: %q (YAML: %s)", ref, msg)}}
			}
		}
		return Errors{{Pos: Pos{File: name, Line: line}, Msg: msg}}
	}
	return fmt.Errorf("%s: %s", name, msg)
}

// lineOf is line l (from 1) of data, or "".
func lineOf(data []byte, l int) string {
	lines := bytes.Split(data, []byte("\n"))
	if l < 1 || l > len(lines) {
		return ""
	}
	return string(lines[l-1])
}
