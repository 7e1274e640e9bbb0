package safefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hangBound is how long a read may take before the test calls it a hang:
// generous, not a timing assertion.
const hangBound = 30 * time.Second

// TestReadBeneathRefusesFIFO plants a FIFO where a build's bzImage should
// be: opening it without O_NONBLOCK waits for a writer forever.
func TestReadBeneathRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "bzImage")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadBeneath(dir, "bzImage")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadBeneath of a FIFO = %v, want refused as not a regular file", err)
		}
	case <-time.After(hangBound):
		t.Error("ReadBeneath blocked on a FIFO")
		// Let the blocked open go: a writer appears and leaves.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
	}
}

func TestReadBeneathMax(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".config"), []byte("CONFIG_X=y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Sparse: its size is what counts, nothing is read.
	if err := os.WriteFile(filepath.Join(dir, "vmlinux"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "vmlinux"), 2<<30); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, rel string
		max       int64
		want      string // "" for a read of the whole file
	}{
		{"under the cap", ".config", 64, ""},
		{"at the cap", ".config", 11, ""},
		{"over the cap", ".config", 10, "over the 10"},
		{"huge file, default cap", "vmlinux", DefaultReadMax, "over the 1073741824"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := ReadBeneathMax(dir, tc.rel, tc.max)
			if tc.want == "" {
				if err != nil || string(data) != "CONFIG_X=y\n" {
					t.Errorf("ReadBeneathMax = %q, %v", data, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadBeneathMax = %d bytes, %v; want an error with %q", len(data), err, tc.want)
			}
		})
	}
}

// TestReadWithin follows the source tree's own links, none out of it.
func TestReadWithin(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(dir, "net", "forwarding"), 0o755)
	os.MkdirAll(filepath.Join(dir, "dsa"), 0o755)
	os.WriteFile(filepath.Join(dir, "net", "forwarding", "lib.sh"), []byte("lib\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o600)
	os.Symlink("../net/forwarding/lib.sh", filepath.Join(dir, "dsa", "lib.sh"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "dsa", "abs.sh"))
	os.Symlink("../../"+filepath.Base(outside)+"/secret", filepath.Join(dir, "dsa", "up.sh"))
	if data, err := ReadWithin(dir, "dsa/lib.sh", 64); err != nil || string(data) != "lib\n" {
		t.Errorf("ReadWithin of an in-tree link = %q, %v", data, err)
	}
	for _, rel := range []string{"dsa/abs.sh", "dsa/up.sh"} {
		if data, err := ReadWithin(dir, rel, 64); err == nil {
			t.Errorf("ReadWithin(%s) read %q out of the tree", rel, data)
		}
	}
	if _, err := ReadBeneathMax(dir, "dsa/lib.sh", 64); err == nil {
		t.Error("ReadBeneathMax followed a link")
	}
}

func TestMkdirBeneath(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.Symlink(outside, filepath.Join(dir, "bpf"))
	if err := MkdirBeneath(dir, "bpf/x", 0o755); err == nil {
		t.Error("MkdirBeneath followed a link")
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Error("MkdirBeneath created a folder through a link")
	}
	if err := MkdirBeneath(dir, "a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MkdirBeneath(dir, "a/b", 0o755); err != nil {
		t.Errorf("MkdirBeneath of an existing folder = %v", err)
	}
}
