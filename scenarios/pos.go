package scenarios

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a place in a scenario file (or a file it includes).
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

func (p Pos) String() string {
	if p.Col > 0 {
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// lineStride separates the line numbers of included files: nodes of the
// k-th file carry line k*lineStride + line until positions are resolved.
const lineStride = 1 << 20

// files maps the combined line numbers back to files.
type files []string

func (f files) resolve(line, col int) Pos {
	k := line / lineStride
	if k >= len(f) {
		k = 0
	}
	return Pos{File: f[k], Line: line % lineStride, Col: col}
}

// Errors is every problem found in a scenario, in file order.
type Errors []PosError

// PosError is one problem at a place.
type PosError struct {
	Pos Pos
	Msg string
}

func (e PosError) Error() string { return e.Pos.String() + ": " + e.Msg }

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// collector gathers errors, dropping exact repeats, and warnings.
type collector struct {
	files files
	errs  Errors
	warns Errors
	seen  map[string]bool
	lines map[Pos]bool // file and line of every error so far
	// unknownIn are the mappings (by position) that held an unknown key: a
	// step whose action key was misspelled has no action, said once.
	unknownIn map[Pos]bool
}

// reported says whether an error was already reported on that combined line.
func (c *collector) reported(line int) bool {
	p := c.files.resolve(line, 0)
	return c.lines[p]
}

// at reports a problem at a combined line and column.
func (c *collector) at(line, col int, format string, args ...any) {
	c.add(c.files.resolve(line, col), format, args...)
}

func (c *collector) add(p Pos, format string, args ...any) {
	e := PosError{Pos: p, Msg: fmt.Sprintf(format, args...)}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[e.Error()] {
		return
	}
	c.seen[e.Error()] = true
	if c.lines == nil {
		c.lines = map[Pos]bool{}
	}
	c.lines[Pos{File: p.File, Line: p.Line}] = true
	c.errs = append(c.errs, e)
}

// warn records a problem that does not stop a run.
func (c *collector) warn(p Pos, format string, args ...any) {
	c.warns = append(c.warns, PosError{Pos: p, Msg: "warning: " + fmt.Sprintf(format, args...)})
}

func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	c.sort(c.errs)
	return c.errs
}

// warnings returns the warnings in file order, as "file:line:col: warning: ...".
func (c *collector) warnings() []string {
	c.sort(c.warns)
	var out []string
	for _, w := range c.warns {
		out = append(out, w.Error())
	}
	return out
}

// sort orders problems by file (the main file first), line and column.
func (c *collector) sort(es Errors) {
	order := map[string]int{}
	for i, f := range c.files {
		order[f] = i
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i].Pos, es[j].Pos
		if a.File != b.File {
			return order[a.File] < order[b.File]
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}
