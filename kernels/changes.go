package kernels

import (
	"context"
	"debug/elf"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"napilab/internal/safefs"
	"napilab/patches"
)

// Changed is a function a kernel's series changes and how a run can count
// its calls.
type Changed struct {
	File string
	Func string
	// Probes are the symbols whose calls stand for the function's: its own,
	// a compiler clone (name.part.0, .isra, .constprop), or, when it was
	// inlined, the functions of its file that call it. None: not countable.
	Probes []string
	// Via says what Probes are when they are not the function itself:
	// "clone" or "callers" (a caller runs more often than its callee).
	Via string
}

// maxHunkFile caps a source file read to place a hunk.
const maxHunkFile = 16 << 20

// SeriesFunctions lists the functions the spec's own patches (those it
// adds to the spec it extends) change: each hunk placed in the spec's
// patched tree when the cache holds it, else by the hunk's function
// context, and checked against the function symbols of the built vmlinux.
// A spec without patches of its own changes none.
func SeriesFunctions(ctx context.Context, spec *Spec, a *Artifact, cacheDir string) ([]Changed, error) {
	own := spec.Patches
	if spec.Extends != "" {
		parent, err := LoadSpec(spec.Extends)
		if err != nil {
			return nil, err
		}
		own = own[min(len(parent.Patches), len(own)):]
	}
	if len(own) == 0 {
		return nil, nil
	}
	series, err := patches.LoadAll(own...)
	if err != nil {
		return nil, err
	}
	tree := patchedTree(ctx, spec, cacheDir)
	var found []patches.Change
	for i := range series.Patches {
		for _, h := range series.Patches[i].Hunks() {
			for _, c := range placeHunk(tree, h) {
				if !slices.Contains(found, c) {
					found = append(found, c)
				}
			}
		}
	}
	syms, err := functionSymbols(filepath.Join(a.Dir, VmlinuxFile))
	if err != nil {
		return nil, err
	}
	out := make([]Changed, len(found))
	for i, c := range found {
		out[i] = probesFor(c, syms, tree)
	}
	return out, nil
}

// cIdent is a C function name: what a name given on the command line must be
// before it becomes a kprobe.
var cIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// NamedFunctions resolves functions named by hand (lab run --cover) to the
// symbols that count their calls: their own or a compiler clone's. A name
// the vmlinux has no symbol for (inlined everywhere, or not built) is an
// error that says so: its callers must be named instead.
func NamedFunctions(a *Artifact, names []string) ([]Changed, error) {
	syms, err := functionSymbols(filepath.Join(a.Dir, VmlinuxFile))
	if err != nil {
		return nil, err
	}
	return namedFunctions(syms, names)
}

// PresentFunctions resolves the names the kernel has symbols for and
// leaves the others out (lab explore's watch list spans releases).
func PresentFunctions(a *Artifact, names []string) ([]Changed, error) {
	syms, err := functionSymbols(filepath.Join(a.Dir, VmlinuxFile))
	if err != nil {
		return nil, err
	}
	found, _, err := resolveNamed(syms, names)
	return found, err
}

// CheckFunctionName says whether a name given by hand can be a kernel
// function's.
func CheckFunctionName(n string) error {
	if !cIdent.MatchString(n) {
		return fmt.Errorf("cover %q: not a C function name", n)
	}
	return nil
}

func namedFunctions(syms map[string]bool, names []string) ([]Changed, error) {
	out, missing, err := resolveNamed(syms, names)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cover %s: the kernel has no function symbol of that name (inlined everywhere or not built): name its callers", strings.Join(missing, ", "))
	}
	return out, nil
}

// resolveNamed splits names into those with symbols that count their calls
// and those without.
func resolveNamed(syms map[string]bool, names []string) (found []Changed, missing []string, err error) {
	for _, n := range names {
		if err := CheckFunctionName(n); err != nil {
			return nil, nil, err
		}
		c := probesFor(patches.Change{Func: n}, syms, "")
		if len(c.Probes) == 0 {
			missing = append(missing, n)
			continue
		}
		found = append(found, c)
	}
	return found, missing, nil
}

// probesFor finds the symbols that count a changed function's calls.
func probesFor(c patches.Change, syms map[string]bool, tree string) Changed {
	ch := Changed{File: c.File, Func: c.Func}
	if syms[c.Func] {
		ch.Probes = []string{c.Func}
		return ch
	}
	for _, s := range slices.Sorted(maps.Keys(syms)) {
		if rest, ok := strings.CutPrefix(s, c.Func+"."); ok && !strings.Contains(rest, "cold") {
			ch.Probes, ch.Via = append(ch.Probes, s), "clone"
		}
	}
	if len(ch.Probes) > 0 || tree == "" {
		return ch
	}
	data, err := safefs.ReadBeneathMax(tree, c.File, maxHunkFile)
	if err != nil {
		return ch
	}
	lines := strings.Split(string(data), "\n")
	call := regexp.MustCompile(`\b` + regexp.QuoteMeta(c.Func) + `\s*\(`)
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(l, "\t") || !call.MatchString(l) || strings.HasPrefix(t, "*") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "//") {
			continue // not in a body, no call, or a comment
		}
		if fn := enclosing(lines, i); fn != "" && fn != c.Func && syms[fn] && !slices.Contains(ch.Probes, fn) {
			ch.Probes, ch.Via = append(ch.Probes, fn), "callers"
		}
	}
	return ch
}

// patchedTree is the spec's patched source in the cache, or "" when the
// cache does not hold it (collected, or a tree base).
func patchedTree(ctx context.Context, spec *Spec, cacheDir string) string {
	l := layout{cacheDir}
	if l.root == "" {
		l.root = DefaultCacheDir()
	}
	in, err := resolveInputs(ctx, l, spec)
	if err != nil || in.tree != nil || !in.hasPatches() {
		return ""
	}
	dir := l.sourceDir(spec, in)
	if _, err := readMarker(dir); err != nil {
		return ""
	}
	return dir
}

// placeHunk finds the functions of a hunk's changed lines in the patched
// file: the hunk's new side is looked for near its header's line, then
// anywhere; each changed line belongs to the definition above it unless a
// closing brace at column 0 comes first. A hunk that cannot be placed falls
// back to its header's function context.
func placeHunk(tree string, h patches.DiffHunk) []patches.Change {
	fallback := func() []patches.Change {
		if h.Context == "" {
			return nil
		}
		return []patches.Change{{File: h.File, Func: h.Context}}
	}
	if tree == "" {
		return fallback()
	}
	data, err := safefs.ReadBeneathMax(tree, h.File, maxHunkFile)
	if err != nil {
		return fallback()
	}
	lines := strings.Split(string(data), "\n")
	at := findBlock(lines, h.Lines, h.NewStart-1)
	if at < 0 {
		return fallback()
	}
	var out []patches.Change
	add := func(fn string) {
		c := patches.Change{File: h.File, Func: fn}
		if fn != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, off := range h.Added {
		add(enclosing(lines, at+off))
	}
	for _, off := range h.Removed {
		// Lines removed after a body's closing brace were outside it.
		if i := at + off; i < 0 || !strings.HasPrefix(lines[i], "}") {
			add(enclosing(lines, max(i, 0)))
		}
	}
	return out
}

// findBlock returns where block starts in lines: at hint if it is there,
// else its first place, else -1.
func findBlock(lines, block []string, hint int) int {
	match := func(i int) bool {
		if i < 0 || i+len(block) > len(lines) {
			return false
		}
		for j, b := range block {
			if lines[i+j] != b {
				return false
			}
		}
		return true
	}
	if len(block) == 0 {
		return -1
	}
	if match(hint) {
		return hint
	}
	for i := range lines {
		if match(i) {
			return i
		}
	}
	return -1
}

// enclosing names the function whose body holds line i, or "".
func enclosing(lines []string, i int) string {
	for j := min(i, len(lines)-1); j >= 0; j-- {
		l := lines[j]
		if name := patches.DefName(l); name != "" {
			return name
		}
		if strings.HasPrefix(l, "}") && j != i {
			return ""
		}
	}
	return ""
}

// functionSymbols reads the function symbols of a vmlinux.
func functionSymbols(vmlinux string) (map[string]bool, error) {
	f, err := elf.Open(vmlinux)
	if err != nil {
		return nil, fmt.Errorf("symbols of %s: %w", vmlinux, err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("symbols of %s: %w", vmlinux, err)
	}
	out := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			out[s.Name] = true
		}
	}
	return out, nil
}
