package results

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNewRunDirExclusive: the same name twice in one second gives two
// folders (lab run a.yaml a.yaml once wrote both runs into one).
func TestNewRunDirExclusive(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.Local)
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		dir, err := newRunDir(root, "a@stock-6.1", now)
		if err != nil {
			t.Fatal(err)
		}
		if seen[dir] {
			t.Fatalf("%s handed out twice", dir)
		}
		seen[dir] = true
	}
	if !seen[filepath.Join(root, "20261201-100000-a-stock-6.1-2")] {
		t.Errorf("no -2 suffix among %v", seen)
	}
}

// TestNewRunDirUnderRoot: whatever the name, the folder is a direct child of root.
func TestNewRunDirUnderRoot(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"../../../../tmp/escaped", "/etc/x", "..", "", "a\x00b", strings.Repeat("é", 300)} {
		dir, err := NewRunDir(root, name)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if filepath.Dir(dir) != root {
			t.Errorf("%q: run folder %s is not directly under %s", name, dir, root)
		}
		if len(filepath.Base(dir)) > 255 {
			t.Errorf("%q: folder name of %d bytes", name, len(filepath.Base(dir)))
		}
	}
}
