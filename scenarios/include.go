package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"napilab/results"
)

// FragmentsDir is the shipped fragments folder, which any scenario may
// include from. A relative path is taken from the working folder: lab runs
// from the project root, like its other defaults (kernels/, results/runs).
var FragmentsDir = "scenarios/fragments"

// MaxFileSize bounds a scenario file and each fragment it includes.
const MaxFileSize = 1 << 20

// roots are the folders includes may come from: the main scenario's folder
// and FragmentsDir, symlinks resolved.
type roots []string

func includeRoots(mainFile string) roots {
	var rs roots
	for _, d := range []string{filepath.Dir(mainFile), FragmentsDir} {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue // a missing fragments folder allows nothing
		}
		if abs, err := filepath.Abs(real); err == nil {
			rs = append(rs, abs)
		}
	}
	return rs
}

// read resolves an include of the file from and reads it: a regular file
// of at most MaxFileSize under one of the roots, symlinks resolved before
// the check. Errors name from's line and never show a refused file's content.
func (rs roots) read(from string, inc yaml.Node) (string, []byte, error) {
	fail := func(format string, args ...any) (string, []byte, error) {
		return "", nil, Errors{{Pos: Pos{File: from, Line: inc.Line}, Msg: fmt.Sprintf(format, args...)}}
	}
	if inc.Kind != yaml.ScalarNode || inc.Value == "" {
		return fail("include: want a file name")
	}
	p := inc.Value
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(from), p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fail("include %s: %s not found", inc.Value, p)
	}
	if err != nil {
		return fail("include %s: %v", inc.Value, err)
	}
	if !rs.hold(real) {
		return fail("include %s: %s is outside the scenario's folder and the shipped fragments (%s)",
			inc.Value, real, strings.Join(rs, ", "))
	}
	b, err := results.ReadRegular(real, MaxFileSize)
	if err != nil {
		return fail("include %s: %v", inc.Value, err)
	}
	return p, b, nil
}

// hold says whether path is inside one of the roots.
func (rs roots) hold(path string) bool {
	for _, r := range rs {
		rel, err := filepath.Rel(r, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// keyNode returns the key node of a mapping's key, or nil.
func keyNode(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}
