package patches

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A patch series is written by others: the file names its diff gives
// become paths that lab, as root, writes in a tree. They are read here from
// the diff the way GNU patch reads them (its header lines, -pN stripping),
// never from patch's output, and every one is checked. Reading is a
// superset: any line patch could take as a header is read, wherever it is,
// so that no name patch may use goes unchecked.

// ErrUnsafeName marks a file name or file mode in a diff that lab refuses to apply.
var ErrUnsafeName = errors.New("refused file name or mode")

// NameError reports a diff line whose file name or mode lab refuses.
type NameError struct {
	// File is the patch file.
	File string
	// Line is the line in File, or the line in the decoded mail body when InBody is set.
	Line int
	// InBody says Line counts from the start of the patch's decoded mail body.
	InBody bool
	// Subject is the patch's subject.
	Subject string
	// Name is the file name as patch would use it (after -pN), or the header line of a mode.
	Name string
	// Mode is set when Name is a git file mode, not a name.
	Mode bool
	// Reason says what is wrong with it.
	Reason string
}

// Error renders `file:12: refused file name "a/../b": has a .. component`.
func (e *NameError) Error() string {
	where := fmt.Sprintf("%s:%d", e.File, e.Line)
	if e.InBody {
		where = fmt.Sprintf("%s: patch %q, line %d of its decoded mail body", e.File, e.Subject, e.Line)
	}
	what := "file name"
	if e.Mode {
		what = "file mode"
	}
	return fmt.Sprintf("%s: refused %s %q: %s", where, what, e.Name, e.Reason)
}

// Unwrap returns ErrUnsafeName.
func (e *NameError) Unwrap() error { return ErrUnsafeName }

// CheckName reports why name cannot be a path lab writes below a tree, or
// nil: it must be relative and clean (no "", "." or ".." component, no
// leading or trailing slash) and printable ASCII (no control characters,
// no bytes that need quoting in patch's messages other than a space).
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("control character %q at byte %d", c, i)
		}
		if c >= 0x80 {
			return fmt.Errorf("non-ASCII byte %#x at byte %d: want a plain ASCII name", c, i)
		}
	}
	for _, part := range strings.Split(name, "/") {
		switch part {
		case "..":
			return errors.New("has a .. component")
		case "", ".":
			return errors.New("not a clean relative path (empty or . component)")
		}
	}
	return nil
}

// Files returns the files p's diff names, relative to the tree (after -pN),
// each once in the order they first appear. It refuses, with a *NameError
// naming the patch file and line, a name CheckName refuses, a C-quoted name
// ("..." in git's format, where escapes hide newlines) and a git mode that
// makes a symlink: a kernel series has no reason to add symlinks, and a link
// would let a later name lead out of the tree.
func (p *Patch) Files() ([]string, error) {
	names, err := diffNames(p.Diff, p.Strip)
	var le *lineError
	if errors.As(err, &le) {
		ne := &NameError{File: p.File, Line: le.line, Subject: p.Subject, Name: le.name, Mode: le.mode, Reason: le.reason}
		if p.bodyLine > 0 {
			ne.Line += p.bodyLine - 1
		} else if p.bodyLine < 0 {
			ne.InBody = true
		}
		return nil, ne
	}
	return names, err
}

// lineError is a refused name at a 1-based line of a diff.
type lineError struct {
	line         int
	name, reason string
	mode         bool
}

func (e *lineError) Error() string {
	return fmt.Sprintf("line %d: refused %q: %s", e.line, e.name, e.reason)
}

// diffNames reads every header line of diff as GNU patch would (after its
// indentation of blanks and 'X'), returning the names patch -p<strip> would
// take from them and refusing unsafe names and symlink modes.
func diffNames(diff []byte, strip int) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	add := func(line int, name string, ok bool, err string) error {
		if err != "" {
			return &lineError{line: line, name: name, reason: err}
		}
		if !ok {
			return nil
		}
		if reason := CheckName(name); reason != nil {
			return &lineError{line: line, name: name, reason: reason.Error()}
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
		return nil
	}
	text := string(diff)
	for n := 1; text != ""; n++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		s := strings.TrimLeft(line, " \tX")
		var err error
		switch {
		case hasHeader(s, "***"), hasHeader(s, "+++"):
			name, ok, bad := fetchName(s[4:], strip, true)
			err = add(n, name, ok, bad)
		case strings.HasPrefix(s, "Index:"):
			name, ok, bad := fetchName(s[6:], strip, false)
			err = add(n, name, ok, bad)
		case strings.HasPrefix(s, "diff --git "):
			rest := s[len("diff --git "):]
			for range 2 {
				var name string
				var ok bool
				var bad string
				name, rest, ok, bad = parseName(rest, strip)
				if err = add(n, name, ok, bad); err != nil || rest == "" {
					break
				}
			}
		case strings.HasPrefix(s, "index "):
			if f := strings.Fields(s); len(f) == 3 {
				err = checkMode(n, s, f[2])
			}
		case strings.HasPrefix(s, "old mode "), strings.HasPrefix(s, "new mode "),
			strings.HasPrefix(s, "deleted file mode "), strings.HasPrefix(s, "new file mode "):
			f := strings.Fields(s)
			err = checkMode(n, s, f[len(f)-1])
		default:
			t := s
			for strings.HasPrefix(t, "- ") {
				t = t[2:]
			}
			if hasHeader(t, "---") {
				name, ok, bad := fetchName(t[4:], strip, true)
				err = add(n, name, ok, bad)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}

// hasHeader reports whether s starts with prefix and a blank, as patch's headers do.
func hasHeader(s, prefix string) bool {
	return len(s) > len(prefix) && strings.HasPrefix(s, prefix) && (s[len(prefix)] == ' ' || s[len(prefix)] == '\t')
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// fetchName takes a file name from a ---, +++, *** (stamped) or Index:
// header as GNU patch does: up to a blank, or with inner blanks when a tab
// (stamped) or the line end follows them. ok is false for a name patch
// ignores (/dev/null, too few slashes to strip); bad says why it is refused.
func fetchName(at string, strip int, stamped bool) (name string, ok bool, bad string) {
	at = strings.TrimLeftFunc(at, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
	if strings.HasPrefix(at, `"`) {
		return at, false, "a C-quoted name: quoted names are not accepted (they can hide newlines and escapes)"
	}
	line := at + "\n"
	end := len(at)
	for t := 0; t < len(at); t++ {
		if !isSpace(line[t]) {
			continue
		}
		// Inner blanks are part of the name only if a tab (or, unstamped,
		// a newline) comes after the run of them.
		u := t
		for line[u] != '\t' && u+1 < len(line) && isSpace(line[u+1]) {
			u++
		}
		want := "\n"
		if stamped {
			want = "\t"
		}
		if line[u] != '\t' && strings.Contains(line[u+1:], want) {
			continue
		}
		end = t
		break
	}
	name = at[:end]
	if name == "/dev/null" {
		return "", false, ""
	}
	name, ok = stripLeading(name, strip)
	return name, ok, ""
}

// parseName takes one name of a "diff --git" line: up to a blank. It returns
// the rest of the line after the name.
func parseName(s string, strip int) (name, rest string, ok bool, bad string) {
	s = strings.TrimLeft(s, " \t\v\f\r")
	if strings.HasPrefix(s, `"`) {
		return s, "", false, "a C-quoted name: quoted names are not accepted (they can hide newlines and escapes)"
	}
	end := 0
	for end < len(s) && !isSpace(s[end]) {
		end++
	}
	name, rest = s[:end], s[end:]
	if name == "" {
		return "", "", false, ""
	}
	name, ok = stripLeading(name, strip)
	return name, rest, ok, ""
}

// stripLeading drops the shortest prefix holding strip slashes (a run of
// slashes counts as one), as patch -pN does; ok is false when name has too
// few or nothing is left.
func stripLeading(name string, strip int) (string, bool) {
	n, left := 0, strip
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		for i+1 < len(name) && name[i+1] == '/' {
			i++
		}
		if left--; left >= 0 {
			n = i + 1
		}
	}
	if left > 0 || n >= len(name) {
		return "", false
	}
	return name[n:], true
}

// checkMode refuses a git file mode (field of the header line text) that
// makes a symlink (120000).
func checkMode(line int, text, field string) error {
	mode, err := strconv.ParseUint(strings.TrimSpace(field), 8, 32)
	if err != nil {
		return nil // patch ignores a mode it cannot read
	}
	if mode&0o170000 == 0o120000 {
		return &lineError{line: line, name: strings.TrimRight(text, "\r"), mode: true,
			reason: "a git mode that makes a symlink: a kernel patch series has no reason to add symlinks, and lab does not apply them"}
	}
	return nil
}
