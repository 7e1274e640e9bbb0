package model

import (
	"strconv"
	"strings"
)

// Kernel is the release of the kernel under test, as far as the rules'
// semantics differ between releases (0.0: unknown, only the rules that
// hold on every release apply).
type Kernel struct {
	Major, Minor int
}

// KernelOf reads a release as uname -r gives it: "7.3.4-napilab".
func KernelOf(release string) Kernel {
	f := strings.SplitN(release, ".", 3)
	if len(f) < 2 {
		return Kernel{}
	}
	major, err1 := strconv.Atoi(f[0])
	digits := f[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i] // "17-rc1"
	}
	minor, err2 := strconv.Atoi(digits)
	if err1 != nil || err2 != nil {
		return Kernel{}
	}
	return Kernel{major, minor}
}

// AtLeast says the kernel is major.minor or newer.
func (k Kernel) AtLeast(major, minor int) bool {
	return k.Major > major || k.Major == major && k.Minor >= minor
}

// stopsKthreads says threaded=0 stops a NAPI's kthread: 689883de94dd ("net:
// stop napi kthreads when THREADED napi is disabled", 6.17). Before it the
// kthread stays until the NAPI is deleted.
func (k Kernel) stopsKthreads() bool { return k.AtLeast(6, 17) }
