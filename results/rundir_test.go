package results

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheckName(t *testing.T) {
	for _, n := range []string{"stock-6.1", "threaded-toggle-under-load", "a.b_c", "x"} {
		if err := CheckName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"", "../../../../tmp/x", "a/b", ".hidden", "-x", "a b", strings.Repeat("x", MaxNameLen+1)} {
		if CheckName(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

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

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("ok"), 0o644)
	if b, err := ReadRegular(small, 2); err != nil || string(b) != "ok" {
		t.Errorf("small file: %q, %v", b, err)
	}
	if _, err := ReadRegular(small, 1); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("over the limit: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadRegular(fifo, 10); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("fifo: %v", err)
		}
	case <-time.After(5 * time.Second):
		os.WriteFile(fifo, nil, 0) // unblock the reader
		t.Fatal("reading a FIFO blocked")
	}
	if _, err := ReadRegular("/dev/zero", 10); err == nil {
		t.Error("/dev/zero read")
	}
}
