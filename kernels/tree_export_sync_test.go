package kernels

import (
	"errors"
	"napilab/internal/safefs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportPlantedLink: a symlink planted in the export while the patched
// files are linked in (as a sandboxed build could) makes the export fail,
// naming the patch and file, without a write through it; the files the
// failed export created are removed by the next one.
func TestExportPlantedLink(t *testing.T) {
	requireGNUPatch(t)
	repo := newRepo(t)
	cache := filepath.Join(t.TempDir(), "cache")
	victim := victimDir(t, cache)
	pdir := t.TempDir()
	writeFiles(t, pdir, map[string]string{
		"0001-one.patch": "--- /dev/null\n+++ b/net/one/new1.c\n@@ -0,0 +1 @@\n+int one;\n",
		"0002-two.patch": "--- /dev/null\n+++ b/net/two/new2.c\n@@ -0,0 +1 @@\n+int two;\n",
		"series":         "0001-one.patch\n0002-two.patch\n",
	})
	l := layout{cache}
	out := l.exportDir("planted")
	testHookLinked = func(name string) {
		if name != "net/one/new1.c" {
			return
		}
		two := filepath.Join(out, "net/two")
		if err := os.Remove(two); err != nil {
			t.Error(err)
		}
		if err := os.Symlink("../../../../victim", two); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookLinked = nil }()
	spec := &Spec{Name: "planted", Base: Base{Tree: repo}, Patches: []string{pdir}}
	err := exportSpec(t, l, spec)
	if err == nil || !errors.Is(err, safefs.ErrNotBeneath) || !strings.Contains(err.Error(), "net/two/new2.c") ||
		!strings.Contains(err.Error(), "0002-two.patch") {
		t.Fatalf("export with a link planted on the way: %v, want an error naming 0002-two.patch and net/two/new2.c", err)
	}
	if _, err := os.Stat(filepath.Join(victim, "new2.c")); err == nil {
		t.Errorf("a patched file was linked through the planted link")
	}
	testHookLinked = nil
	spec.Patches = nil
	if err := exportSpec(t, l, spec); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"net/one/new1.c", "net/one", "net/two"} {
		if _, err := os.Lstat(filepath.Join(out, rel)); err == nil {
			t.Errorf("%s, created by the failed export, is still there", rel)
		}
	}
	if data, err := os.ReadFile(filepath.Join(out, "net/core/dev.c")); err != nil || string(data) != kernelTree["net/core/dev.c"] {
		t.Errorf("after the failed export, dev.c = %q, %v; want the tree's", data, err)
	}
}

// TestSyncPatched: each way a name can lead outside (a symlink on the way
// in the export or in the patched copy, a symlink or folder as the file, a
// name with ..) is an error that names the file, and nothing outside the
// folders is written or removed.
func TestSyncPatched(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		// setup prepares src (the patched copy) and dst (the export); out is a folder outside both.
		setup func(t *testing.T, src, dst, out string)
	}{
		{"link on the way in the export", "evil/secret.txt", func(t *testing.T, src, dst, out string) {
			writeFiles(t, src, map[string]string{"evil/secret.txt": "patched\n"})
			symlink(t, out, filepath.Join(dst, "evil"))
		}},
		{"link on the way in the patched copy", "evil/secret.txt", func(t *testing.T, src, dst, out string) {
			symlink(t, out, filepath.Join(src, "evil"))
		}},
		{"deleted through a link", "evil/secret.txt", func(t *testing.T, src, dst, out string) {
			symlink(t, out, filepath.Join(dst, "evil"))
		}},
		{"patched file is a symlink", "net/x.c", func(t *testing.T, src, dst, out string) {
			writeFiles(t, dst, map[string]string{"net/x.c": "x\n"})
			symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(src, "net/x.c"))
		}},
		{"dot-dot name", "../out/secret.txt", func(t *testing.T, src, dst, out string) {
			writeFiles(t, src, map[string]string{"x": ""})
		}},
		{"export holds a folder", "net", func(t *testing.T, src, dst, out string) {
			writeFiles(t, src, map[string]string{"net": "file\n"})
			writeFiles(t, dst, map[string]string{"net/x.c": "x\n"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			src, dst, out := filepath.Join(root, "src"), filepath.Join(root, "dst"), filepath.Join(root, "out")
			for _, d := range []string{src, dst} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFiles(t, out, map[string]string{"secret.txt": "root's\n"})
			tc.setup(t, src, dst, out)
			recorded := false
			_, err := syncPatched(src, dst, []string{tc.file}, func([]string) error { recorded = true; return nil })
			var fe *fileError
			if !errors.As(err, &fe) || fe.name != tc.file {
				t.Errorf("syncPatched = %v, want an error naming %s", err, tc.file)
			}
			if recorded {
				t.Errorf("created files were recorded: the export was about to be touched")
			}
			if data, err := os.ReadFile(filepath.Join(out, "secret.txt")); err != nil || string(data) != "root's\n" {
				t.Errorf("the file outside: %q, %v; want it untouched", data, err)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 1 {
				t.Errorf("the folder outside holds %d entries, want 1", len(entries))
			}
		})
	}
}

// symlink makes link point at target, failing the test on error.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
