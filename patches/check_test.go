package patches

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// requirePatch skips tests that run GNU patch when it is not installed.
func requirePatch(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("GNU patch not installed (apt-get install patch)")
	}
}

// fixtureTree copies testdata/tree into a fresh temp dir and returns its path.
func fixtureTree(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(dst, os.DirFS("testdata/tree")); err != nil {
		t.Fatal(err)
	}
	return dst
}

// fileState is what a test remembers about a file: content, inode, link count.
type fileState struct {
	content string
	ino     uint64
	nlink   uint64
}

// snapshot records every regular file under dir.
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = fileState{string(data), st.Ino, uint64(st.Nlink)}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mustLoad loads series paths, failing the test on error.
func mustLoad(t *testing.T, paths ...string) *Series {
	t.Helper()
	s, err := LoadAll(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheckStates(t *testing.T) {
	requirePatch(t)
	tests := []struct {
		patch   string
		state   State
		hunks   []Hunk
		missing []string
		summary string
	}{
		{"testdata/folder/0001-net-napi-clamp-work-to-the-budget-with-min.patch", Applies, nil, nil, "applies"},
		{"testdata/states/newfile.patch", Applies, nil, nil, "applies"},
		{"testdata/states/offset.patch", AppliesWithOffset,
			[]Hunk{{File: "net/core/dev.c", Number: 1, Line: 36, Offset: 3}}, nil,
			"applies with offset +3 lines (net/core/dev.c hunk #1 at 36)"},
		{"testdata/states/fuzz.patch", AppliesWithOffset,
			[]Hunk{{File: "net/core/dev.c", Number: 1, Line: 32, Fuzz: 1}}, nil,
			"applies with fuzz 1 (net/core/dev.c hunk #1 at 32)"},
		{"testdata/states/present.patch", AlreadyPresent, nil, nil, "already present (the reverse applies)"},
		{"testdata/states/conflict.patch", Conflicts,
			[]Hunk{{File: "net/core/dev.c", Number: 2, Line: 37, Failed: true}}, nil,
			"conflicts: net/core/dev.c hunk #2 FAILED at 37"},
		{"testdata/states/missing.patch", Conflicts, nil, []string{"net/core/gro.c"},
			"conflicts: can't find file to patch net/core/gro.c"},
		{"testdata/states/malformed.patch", Malformed, nil, nil, "malformed: malformed patch at line 8: Xstatic int napi_weight = 32;"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.patch), func(t *testing.T) {
			tree := fixtureTree(t)
			results, err := Check(context.Background(), mustLoad(t, tc.patch), tree)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != 1 {
				t.Fatalf("%d results, want 1", len(results))
			}
			r := results[0]
			if r.State != tc.state || !reflect.DeepEqual(r.Hunks, tc.hunks) || !reflect.DeepEqual(r.Missing, tc.missing) {
				t.Errorf("state %s, hunks %+v, missing %q\nwant %s, %+v, %q\noutput:\n%s", r.State, r.Hunks, r.Missing,
					tc.state, tc.hunks, tc.missing, r.Detail)
			}
			if r.Summary() != tc.summary {
				t.Errorf("Summary() = %q, want %q", r.Summary(), tc.summary)
			}
		})
	}
}

func TestCheckStacksPatches(t *testing.T) {
	requirePatch(t)
	tree := fixtureTree(t)
	// Patch 1 again after the series: on top of the series it is already present.
	// The conflict is skipped, so the patch after it is checked without it.
	s := mustLoad(t, "testdata/series.mbox", "testdata/folder/0001-net-napi-clamp-work-to-the-budget-with-min.patch",
		"testdata/states/conflict.patch", "testdata/states/offset.patch")
	results, err := Check(context.Background(), s, tree)
	if err != nil {
		t.Fatal(err)
	}
	var got []State
	for _, r := range results {
		got = append(got, r.State)
	}
	// The series adds a net line above net_rx_action, so offset.patch lands 3+1 lines off.
	want := []State{Applies, Applies, AlreadyPresent, Conflicts, AppliesWithOffset}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("states = %v, want %v", got, want)
	}
	if h := results[4].Hunks; len(h) != 1 || h[0].Offset != 4 {
		t.Errorf("offset.patch on top of the series: hunks %+v, want offset +4", h)
	}
	if want := []string{"include/linux/netdevice.h", "net/core/dev.c"}; !reflect.DeepEqual(results[1].Files, want) {
		t.Errorf("patch 2 touched %q, want %q", results[1].Files, want)
	}
	if want := "patch 4 (conflict): conflicts: net/core/dev.c hunk #2 FAILED at 37"; results[3].String() != want {
		t.Errorf("String() = %q, want %q", results[3], want)
	}
}

func TestCheckLeavesTreeAlone(t *testing.T) {
	requirePatch(t)
	tree := fixtureTree(t)
	before := snapshot(t, tree)
	if _, err := Check(context.Background(), mustLoad(t, "testdata/quilt"), tree); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, tree); !reflect.DeepEqual(after, before) {
		t.Errorf("Check changed the tree:\nbefore %v\nafter  %v", before, after)
	}
	entries, _ := os.ReadDir(filepath.Dir(tree))
	if len(entries) != 1 {
		t.Errorf("Check left %d entries next to the tree, want just the tree", len(entries))
	}
}

func TestApply(t *testing.T) {
	requirePatch(t)
	tree := fixtureTree(t)
	before := snapshot(t, tree)
	dst := filepath.Join(t.TempDir(), "patched")
	results, err := Apply(context.Background(), mustLoad(t, "testdata/quilt", "testdata/states/fuzz.patch"), tree, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || results[2].State != AppliesWithOffset {
		t.Errorf("results = %v", results)
	}
	got := snapshot(t, dst)
	dev := got["net/core/dev.c"].content
	for _, want := range []string{"\twork = min(work, budget);\n", "\tif (n->defer_hard_irqs)\n", "\t\tcond_resched();\n"} {
		if !strings.Contains(dev, want) {
			t.Errorf("patched dev.c lacks %q:\n%s", want, dev)
		}
	}
	after := snapshot(t, tree)
	for name, b := range before {
		a := after[name]
		if a.content != b.content || a.ino != b.ino {
			t.Errorf("%s: the pristine tree changed", name)
		}
		// GNU patch renames a new file over a patched one, which breaks the hardlink;
		// untouched files stay shared with the pristine tree.
		patched := name == "net/core/dev.c" || name == "include/linux/netdevice.h"
		if wantLinks := map[bool]uint64{true: 1, false: 2}[patched]; a.nlink != wantLinks || got[name].nlink != wantLinks {
			t.Errorf("%s: links pristine %d, patched %d, want %d", name, a.nlink, got[name].nlink, wantLinks)
		}
		if !patched && got[name].ino != b.ino {
			t.Errorf("%s: untouched file not shared with the pristine tree", name)
		}
	}
	if len(got) != len(before) {
		t.Errorf("patched tree has %d files, want %d (no .orig or .rej)", len(got), len(before))
	}
}

func TestApplyConflictLeavesNothing(t *testing.T) {
	requirePatch(t)
	tree := fixtureTree(t)
	before := snapshot(t, tree)
	parent := t.TempDir()
	dst := filepath.Join(parent, "patched")
	s := mustLoad(t, "testdata/quilt", "testdata/states/conflict.patch", "testdata/states/newfile.patch")
	results, err := Apply(context.Background(), s, tree, dst)
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("Apply = %v, want *ApplyError", err)
	}
	if len(ae.Results) != 4 || ae.Results[2].State != Conflicts || ae.Results[3].State != Applies || !reflect.DeepEqual(results, ae.Results) {
		t.Errorf("results = %v", ae.Results)
	}
	want := "failed to apply patch series quilt:\n\tpatch 3 (conflict): conflicts: net/core/dev.c hunk #2 FAILED at 37 (testdata/states/conflict.patch)"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("Apply left %v behind", entries)
	}
	if after := snapshot(t, tree); !reflect.DeepEqual(after, before) {
		t.Errorf("Apply changed the pristine tree:\nbefore %v\nafter  %v", before, after)
	}
}

func TestApplyRefusesExistingDst(t *testing.T) {
	requirePatch(t)
	tree := fixtureTree(t)
	dst := t.TempDir()
	_, err := Apply(context.Background(), mustLoad(t, "testdata/quilt"), tree, dst)
	if err == nil || !strings.Contains(err.Error(), dst+" already exists") {
		t.Errorf("Apply = %v, want an error saying %s exists", err, dst)
	}
}

func TestCheckWithoutPatchTool(t *testing.T) {
	tree := fixtureTree(t)
	cp, err := exec.LookPath("cp")
	if err != nil {
		t.Skip("no cp")
	}
	bin := t.TempDir()
	if err := os.Symlink(cp, filepath.Join(bin, "cp")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	_, err = Check(context.Background(), mustLoad(t, "testdata/quilt"), tree)
	if err == nil || !strings.Contains(err.Error(), `required tool "patch" not found in PATH: install it with: apt-get install patch`) {
		t.Errorf("Check = %v, want a missing tool error", err)
	}
}

func TestCheckCancelled(t *testing.T) {
	requirePatch(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Check(ctx, mustLoad(t, "testdata/quilt"), fixtureTree(t))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Check = %v, want context.Canceled", err)
	}
}
