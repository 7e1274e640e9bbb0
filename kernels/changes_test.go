package kernels

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"napilab/patches"
)

const changedFile = `static void helper(void)
{
	x();
}

static inline bool small(int a)
{
	return a > 1;
}

static int poll_loop(void *data)
{
	/* small() is not called here */
	while (small(1))
		helper();
	return 0;
}
`

func TestPlaceHunk(t *testing.T) {
	tree := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tree, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "net/a.c"), []byte(changedFile), 0o644); err != nil {
		t.Fatal(err)
	}
	// Header line numbers are off by 3 (a later patch moved the code) and
	// the header names no function: the hunk is found by its text.
	h := patches.DiffHunk{File: "net/a.c", NewStart: 10, Lines: []string{"{", "\treturn a > 1;", "}", "", "static int poll_loop(void *data)", "{"},
		Added: []int{1}, Removed: []int{3}}
	got := placeHunk(tree, h)
	want := []patches.Change{{File: "net/a.c", Func: "small"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("placeHunk = %v, want %v (a removal after a closing brace is outside any function)", got, want)
	}
	h.Lines[1] = "\tnot in the file;"
	h.Context = "small"
	if got := placeHunk(tree, h); !reflect.DeepEqual(got, want) {
		t.Errorf("unplaced hunk = %v, want its header's function %v", got, want)
	}
	lines := strings.Split(changedFile, "\n")
	syms := map[string]bool{"helper": true, "poll_loop": true, "small.part.0": false}
	if c := probesFor(patches.Change{File: "net/a.c", Func: "small"}, syms, tree); c.Via != "clone" || !reflect.DeepEqual(c.Probes, []string{"small.part.0"}) {
		t.Errorf("clone: %+v", c)
	}
	delete(syms, "small.part.0")
	if c := probesFor(patches.Change{File: "net/a.c", Func: "small"}, syms, tree); c.Via != "callers" || !reflect.DeepEqual(c.Probes, []string{"poll_loop"}) {
		t.Errorf("inlined: %+v, want counted at its caller poll_loop (not at the comment)", c)
	}
	if c := probesFor(patches.Change{File: "net/a.c", Func: "helper"}, syms, tree); c.Via != "" || !reflect.DeepEqual(c.Probes, []string{"helper"}) {
		t.Errorf("own symbol: %+v", c)
	}
	if got := enclosing(lines, 2); got != "helper" {
		t.Errorf("enclosing(line 3) = %q", got)
	}
}

func TestNamedFunctions(t *testing.T) {
	syms := map[string]bool{"napi_enable": true, "skb_defer_free_flush.part.0": true, "skb_defer_free_flush.cold": true}
	got, err := namedFunctions(syms, []string{"napi_enable", "skb_defer_free_flush"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got[0].Probes, []string{"napi_enable"}) || got[0].Via != "" ||
		!slices.Equal(got[1].Probes, []string{"skb_defer_free_flush.part.0"}) || got[1].Via != "clone" {
		t.Errorf("probes: %+v", got)
	}
	for name, want := range map[string]string{
		"napi_thread_wait": "inlined everywhere or not built",
		"p_sym:x":          "not a C function name",
		"../../etc":        "not a C function name",
		"":                 "not a C function name",
		"9napi":            "not a C function name",
	} {
		if _, err := namedFunctions(syms, []string{name}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", name, err, want)
		}
	}
	// lab explore's list spans releases: the missing are left out, a bad name is still an error.
	found, missing, err := resolveNamed(syms, []string{"napi_thread_wait", "napi_enable"})
	if err != nil || len(found) != 1 || found[0].Func != "napi_enable" || !slices.Equal(missing, []string{"napi_thread_wait"}) {
		t.Errorf("resolveNamed: %+v, %v, %v", found, missing, err)
	}
	if _, _, err := resolveNamed(syms, []string{"../x"}); err == nil {
		t.Error("resolveNamed took a path for a name")
	}
}
