package kernels

import (
	"napilab/internal/safefs"
	"path/filepath"
)

// maxBuildFile caps each file lab reads out of a sandboxed kernel build's
// work dir, well above what a real build writes: a 6.1 .config is ~150 KB
// (allyesconfig ~300 KB), bzImage a few MB (the boot protocol loads far less
// than 256 MiB), modules.builtin(.modinfo) under 1 MB. vmlinux gets the cap
// kernel archives give every file: a debug build without DWARF is ~100 MB,
// one with DWARF a few hundred.
var maxBuildFile = map[string]int64{
	".config":                       8 << 20,
	"arch/x86/boot/bzImage":         256 << 20,
	"vmlinux":                       safefs.DefaultReadMax,
	"include/config/kernel.release": 4 << 10,
	"modules.builtin":               16 << 20,
	"modules.builtin.modinfo":       16 << 20,
}

// maxOtherBuildFile caps a file maxBuildFile does not name.
const maxOtherBuildFile = 16 << 20

// readBuildFile reads rel of work, which make wrote sandboxed: beneath
// work, following no link, refusing a FIFO or device and a file over its cap.
func readBuildFile(work, rel string) ([]byte, error) {
	max, ok := maxBuildFile[filepath.ToSlash(filepath.Clean(rel))]
	if !ok {
		max = maxOtherBuildFile
	}
	return safefs.ReadBeneathMax(work, rel, max)
}
