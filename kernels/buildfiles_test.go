package kernels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadBuildFile reads what a sandboxed build could have planted: each
// file has its cap, and a FIFO is refused (ReadBeneathMax's own test
// guards against a hang).
func TestReadBuildFile(t *testing.T) {
	work := t.TempDir()
	writeFiles(t, work, map[string]string{".config": "CONFIG_NET=y\n", "arch/x86/boot/bzImage": ""})
	// Sparse, over bzImage's cap but under vmlinux's.
	if err := os.Truncate(filepath.Join(work, "arch/x86/boot/bzImage"), 300<<20); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(work, "vmlinux"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := readBuildFile(work, ".config"); err != nil || string(data) != "CONFIG_NET=y\n" {
		t.Errorf("readBuildFile(.config) = %q, %v", data, err)
	}
	if _, err := readBuildFile(work, filepath.Join("arch", "x86", "boot", "bzImage")); err == nil || !strings.Contains(err.Error(), "over the 268435456") {
		t.Errorf("readBuildFile of a 300 MiB bzImage = %v, want over its cap", err)
	}
	if _, err := readBuildFile(work, "vmlinux"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("readBuildFile of a FIFO vmlinux = %v, want refused", err)
	}
}
