package patches

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Hunk is one hunk GNU patch reported on: applied off its place, or failed.
type Hunk struct {
	// File is the patched file, as patch names it.
	File string
	// Number is the 1-based hunk number within File.
	Number int
	// Line is the line where the hunk applied, or where patch tried it.
	Line int
	// Offset is how many lines away from the line in the patch it applied.
	Offset int
	// Fuzz is how many context lines patch had to ignore.
	Fuzz int
	// Failed is set when the hunk did not apply.
	Failed bool
}

// String renders "net/core/dev.c hunk #2 FAILED at 120" or "net/core/dev.c hunk #1 at 130: offset +10 lines".
func (h Hunk) String() string {
	if h.Failed {
		return fmt.Sprintf("%s hunk #%d FAILED at %d", h.File, h.Number, h.Line)
	}
	var how []string
	if h.Offset != 0 {
		how = append(how, fmt.Sprintf("offset %+d lines", h.Offset))
	}
	if h.Fuzz != 0 {
		how = append(how, fmt.Sprintf("fuzz %d", h.Fuzz))
	}
	return fmt.Sprintf("%s hunk #%d at %d: %s", h.File, h.Number, h.Line, strings.Join(how, ", "))
}

// outcome is what one run of GNU patch said.
type outcome struct {
	files    []string // "patching file" / "checking file" lines
	hunks    []Hunk   // hunks with an offset, fuzz or failure
	missing  []string // files patch could not find
	reversed []string // files whose change looks already applied
	trouble  string   // "patch: **** ..." message: a malformed patch
}

var (
	fileRe    = regexp.MustCompile(`^(?:patching|checking) (?:file|symbolic link) (.+?)(?: \((?:renamed|copied) from .*\))?$`)
	hunkRe    = regexp.MustCompile(`^Hunk #(\d+) (succeeded|FAILED|ignored) at (\d+)(?: with fuzz (\d+))?(?: \(offset (-?\d+) lines?\))?`)
	troubleRe = regexp.MustCompile(`^patch: \*\*\*\* (.*)$`)
)

// parseOutput reads GNU patch's output (LC_ALL=C); strip is the -p level,
// used to name files that could not be found.
func parseOutput(out string, strip int) outcome {
	var o outcome
	var current, plus, minus string
	inMissing := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case inMissing && strings.HasPrefix(line, "|+++ "):
			plus = diffPath(line[5:], strip)
		case inMissing && strings.HasPrefix(line, "|--- "):
			minus = diffPath(line[5:], strip)
		case inMissing && strings.HasPrefix(line, "No file to patch."):
			name := plus
			if name == "" || name == "/dev/null" {
				name = minus
			}
			o.missing = append(o.missing, name)
			inMissing, plus, minus = false, "", ""
		case strings.HasPrefix(line, "can't find file to patch"):
			inMissing = true
		case strings.HasPrefix(line, "Reversed (or previously applied) patch detected!"):
			o.reversed = append(o.reversed, current)
		default:
			if m := fileRe.FindStringSubmatch(line); m != nil {
				current = unquote(m[1])
				o.files = append(o.files, current)
			} else if m := hunkRe.FindStringSubmatch(line); m != nil {
				h := Hunk{File: current, Failed: m[2] != "succeeded"}
				h.Number, _ = strconv.Atoi(m[1])
				h.Line, _ = strconv.Atoi(m[3])
				h.Fuzz, _ = strconv.Atoi(m[4])
				h.Offset, _ = strconv.Atoi(m[5])
				o.hunks = append(o.hunks, h)
			} else if m := troubleRe.FindStringSubmatch(line); m != nil && o.trouble == "" {
				o.trouble = m[1]
			}
		}
	}
	return o
}

// diffPath turns a "--- a/x.c\t<date>" file name into the path patch -pN would use.
func diffPath(s string, strip int) string {
	s, _, _ = strings.Cut(s, "\t")
	s = strings.TrimSpace(s)
	if s == "/dev/null" {
		return s
	}
	for i := 0; i < strip; i++ {
		_, rest, ok := strings.Cut(s, "/")
		if !ok {
			break
		}
		s = rest
	}
	return s
}

// unquote undoes GNU patch's shell-style quoting of odd file names.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], `'\''`, `'`)
	}
	return s
}
