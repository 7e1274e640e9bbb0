package patches

import (
	"bufio"
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Change is a function a patch touches: a line added or removed inside
// its body or its signature.
type Change struct {
	File string // the file as the diff names it, less its a/ or b/
	Func string
}

// DiffHunk is one hunk of a C file as the patched file holds it.
type DiffHunk struct {
	File string
	// NewStart is the header's first line of the new side (1-based).
	NewStart int
	// Lines is the new side: context and added lines, without their mark.
	Lines []string
	// Added are offsets into Lines of the added lines; Removed are the
	// offsets of the lines removed lines followed (-1: the hunk's start).
	Added, Removed []int
	// Context is the function git's header names ("" when it names none):
	// the function the hunk starts in, when the hunk starts inside one.
	Context string
}

var (
	hunkHeadRe = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@ ?(.*)$`)
	// A definition starts at column 0 with a type and a name before "(";
	// a line ending in ";" is a declaration or a statement-like macro.
	defRe   = regexp.MustCompile(`^[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(`)
	notDefs = []string{"if", "for", "while", "switch", "return", "sizeof"}
)

// Hunks lists the hunks the patch makes to C sources and headers.
func (p *Patch) Hunks() []DiffHunk {
	var out []DiffHunk
	var cur *DiffHunk
	file := ""
	flush := func() {
		if cur != nil && len(cur.Added)+len(cur.Removed) > 0 {
			out = append(out, *cur)
		}
		cur = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(p.Diff))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "+++ "):
			flush()
			file = diffPath(strings.TrimPrefix(l, "+++ "), p.Strip)
			continue
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "diff "):
			flush()
			continue
		}
		if m := hunkHeadRe.FindStringSubmatch(l); m != nil {
			flush()
			if strings.HasSuffix(file, ".c") || strings.HasSuffix(file, ".h") {
				start, _ := strconv.Atoi(m[1])
				cur = &DiffHunk{File: file, NewStart: start, Context: DefName(m[2])}
			}
			continue
		}
		if l == "-- " { // a mail's signature: the diff ended
			flush()
			continue
		}
		if cur == nil || l == "" {
			continue
		}
		switch l[0] {
		case ' ':
			cur.Lines = append(cur.Lines, l[1:])
		case '+':
			cur.Added = append(cur.Added, len(cur.Lines))
			cur.Lines = append(cur.Lines, l[1:])
		case '-':
			if n := len(cur.Lines) - 1; !slices.Contains(cur.Removed, n) {
				cur.Removed = append(cur.Removed, n)
			}
		default:
			flush() // the diff ended
		}
	}
	flush()
	return out
}

// DefName returns the function a column-0 C line starts to define, or "".
func DefName(line string) string {
	t := strings.TrimRight(line, " \t")
	if strings.HasSuffix(t, ";") || strings.HasPrefix(t, "#") {
		return ""
	}
	m := defRe.FindStringSubmatch(t)
	if m == nil || slices.Contains(notDefs, m[1]) {
		return ""
	}
	return m[1]
}
