package kernels

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hostileSeries is where the crafted series of issue 28 live.
const hostileSeries = "../patches/testdata/hostile"

// requireGNUPatch skips a test that applies patches when GNU patch is missing.
func requireGNUPatch(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("GNU patch not installed (apt-get install patch)")
	}
}

// exportSpec loads spec's series and exports it as lab kernel build does,
// returning the first error.
func exportSpec(t *testing.T, l layout, spec *Spec) error {
	t.Helper()
	st, err := resolveTree(context.Background(), l, spec.Base)
	if err != nil {
		t.Fatal(err)
	}
	in := &inputs{spec: spec, tree: st, tarSum: sumString("git-tree " + st.Tree)}
	if in.series, err = loadSeries(spec); err != nil {
		return err
	}
	_, _, err = (&builder{spec: spec, in: in, layout: l}).export(context.Background())
	return err
}

// victimDir makes a folder beside the cache (where ../../../victim from an
// export leads) holding a root-owned secret, and returns it.
func victimDir(t *testing.T, cache string) string {
	t.Helper()
	victim := filepath.Join(filepath.Dir(cache), "victim")
	writeFiles(t, victim, map[string]string{"secret.txt": "root's\n"})
	return victim
}

// TestExportHostileSeries: a series that adds a symlink and hides a file
// name in a C-quoted one (a fake "patching file" line in patch's output)
// deleted a file outside the cache; built in turn with a second series it
// wrote a root-owned file there. Both are refused, naming the patch file
// and line, and nothing outside the cache changes.
func TestExportHostileSeries(t *testing.T) {
	requireGNUPatch(t)
	for _, tc := range []struct {
		name   string
		series []string
		// want are substrings of each build's error, in turn.
		want [][]string
	}{
		{"quoted name deletes through a link", []string{"inject-delete"}, [][]string{
			{"0001-net-add-a-link.patch:6", "new file mode", "symlink"},
		}},
		{"link then write, two series in turn", []string{"inject-delete", "link-then-write"}, [][]string{
			{"0001-net-add-a-link.patch:6", "symlink"},
			{"0001-net-inject-a-file-name.patch:7", "quoted"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t)
			cache := filepath.Join(t.TempDir(), "cache")
			victim := victimDir(t, cache)
			l := layout{cache}
			for i, s := range tc.series {
				spec := &Spec{Name: "hostile", Base: Base{Tree: repo}, Patches: []string{filepath.Join(hostileSeries, s)}}
				err := exportSpec(t, l, spec)
				if err == nil {
					t.Errorf("series %s: exported, want it refused", s)
					continue
				}
				for _, w := range tc.want[i] {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("series %s: error %q, want it to say %q", s, err, w)
					}
				}
			}
			entries, err := os.ReadDir(victim)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, []string{"secret.txt"}) {
				t.Errorf("the folder outside the cache holds %q, want only secret.txt", names)
			}
			if data, err := os.ReadFile(filepath.Join(victim, "secret.txt")); err != nil || string(data) != "root's\n" {
				t.Errorf("the file outside the cache: %q, %v; want it untouched", data, err)
			}
			if _, err := os.Lstat(filepath.Join(l.exportDir("hostile"), "evil")); err == nil {
				t.Errorf("the export holds the series' link evil")
			}
		})
	}
}
