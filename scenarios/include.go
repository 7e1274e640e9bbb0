package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"napilab/internal/safefs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// ShippedDir is the project's scenarios folder (the shipped scenarios and
// their fragments), which any scenario may include from (lab --scenarios,
// $NAPILAB_SCENARIOS). Empty: the first folder, from the main scenario's
// folder upwards, that holds a real scenarios/fragments folder (so
// scenarios/ab and runner/testdata reach it), else the one beside the lab
// binary's folder (bin/lab of a clone: a scenario kept anywhere reaches the
// fragments), else scenarios/ in the working folder.
var ShippedDir = ""

// MaxFileSize bounds a scenario file and each fragment it includes.
const MaxFileSize = 1 << 20

// roots are the folders includes may come from: the main scenario's folder
// and the shipped scenarios folder, symlinks resolved.
type roots struct {
	dirs    []string
	shipped string // the shipped scenarios folder, "" when it is missing
}

func includeRoots(mainFile string) roots {
	var rs roots
	for i, d := range []string{filepath.Dir(mainFile), shippedDir(mainFile)} {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue // a missing folder allows nothing
		}
		if abs, err := filepath.Abs(real); err == nil {
			rs.dirs = append(rs.dirs, abs)
			if i == 1 {
				rs.shipped = abs
			}
		}
	}
	return rs
}

// Shipped is the project's scenarios folder for a scenario file: ShippedDir
// when set, else the nearest scenarios/ (with fragments/) above the file.
func Shipped(mainFile string) string { return shippedDir(mainFile) }

func shippedDir(mainFile string) string {
	if ShippedDir != "" {
		return ShippedDir
	}
	dir, err := filepath.Abs(filepath.Dir(mainFile))
	if err != nil {
		return "scenarios"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if isShipped(filepath.Join(d, "scenarios")) {
			return filepath.Join(d, "scenarios")
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if exe, err := os.Executable(); err == nil {
		if d := filepath.Join(filepath.Dir(filepath.Dir(exe)), "scenarios"); isShipped(d) {
			return d
		}
	}
	return "scenarios"
}

// isShipped says whether d is a scenarios folder with its fragments.
func isShipped(d string) bool {
	return realDir(d) && realDir(filepath.Join(d, "fragments"))
}

// realDir says whether path is a folder and not a link to one.
func realDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// read resolves an include of the file from and reads it: a relative name
// is looked for in from's folder, then in the shipped scenarios folder; the
// file must be regular, at most MaxFileSize and under one of the roots,
// symlinks resolved before the check. Errors name the include's line and
// column and never show a refused file's content.
func (rs roots) read(from string, inc yaml.Node) (string, []byte, error) {
	fail := func(format string, args ...any) (string, []byte, error) {
		return "", nil, Errors{{Pos: Pos{File: from, Line: inc.Line, Col: inc.Column}, Msg: fmt.Sprintf(format, args...)}}
	}
	if inc.Kind != yaml.ScalarNode || inc.Value == "" {
		return fail("include: want a file name")
	}
	tried := []string{inc.Value}
	if !filepath.IsAbs(inc.Value) {
		tried = []string{filepath.Join(filepath.Dir(from), inc.Value)}
		if rs.shipped != "" {
			tried = append(tried, filepath.Join(rs.shipped, inc.Value))
		}
	}
	var p, real string
	var err error
	for _, p = range tried {
		if real, err = filepath.EvalSymlinks(p); err == nil {
			real, err = filepath.Abs(real)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fail("include %s: not found in %s (the including file's folder, then the shipped scenarios: lab --scenarios DIR or $NAPILAB_SCENARIOS names them)",
			inc.Value, strings.Join(tried, " or "))
	}
	if err != nil {
		return fail("include %s: %v", inc.Value, err)
	}
	if !rs.hold(real) {
		return fail("include %s: %s is outside the scenario's folder and the shipped scenarios (%s)",
			inc.Value, real, strings.Join(rs.dirs, ", "))
	}
	b, err := safefs.ReadRegular(real, MaxFileSize)
	if err != nil {
		return fail("include %s: %v", inc.Value, err)
	}
	return p, b, nil
}

// hold says whether path is inside one of the roots.
func (rs roots) hold(path string) bool {
	for _, r := range rs.dirs {
		rel, err := filepath.Rel(r, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// keyNode returns the key node of a mapping's key, or nil.
func keyNode(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}
