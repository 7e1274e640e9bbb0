package patches

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// addSeeds adds every patch file under testdata as a seed of a fuzz target.
func addSeeds(f *testing.F, add func(data []byte)) {
	f.Helper()
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".patch") || strings.HasSuffix(p, ".mbox")) {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil {
			add(data)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
}

// FuzzDiffNames: reading file names from any diff never panics, and every
// name it accepts is one lab may write below a tree: relative, clean, no
// .. component, no control characters, each once.
func FuzzDiffNames(f *testing.F) {
	addSeeds(f, func(data []byte) { f.Add(data, uint8(1)) })
	f.Add([]byte("--- /dev/null\n+++ \"b/x\\npatching file evil/secret.txt\\n\"\n@@ -0,0 +1 @@\n+x\n"), uint8(1))
	f.Add([]byte("Index: a b\n--- a/x y\t2024\n  X+++ b/x y\t2024\n- --- a//b/c\n*** x\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, strip uint8) {
		names, err := diffNames(data, int(strip%4))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, n := range names {
			if err := CheckName(n); err != nil {
				t.Fatalf("accepted %q: %v", n, err)
			}
			if n == "" || path.IsAbs(n) || path.Clean(n) != n || seen[n] {
				t.Fatalf("accepted %q: not a clean relative name, or twice", n)
			}
			for _, part := range strings.Split(n, "/") {
				if part == ".." {
					t.Fatalf("accepted %q with a .. component", n)
				}
			}
			for i := 0; i < len(n); i++ {
				if n[i] < 0x20 || n[i] >= 0x7f {
					t.Fatalf("accepted %q with byte %#x", n, n[i])
				}
			}
			seen[n] = true
		}
	})
}
