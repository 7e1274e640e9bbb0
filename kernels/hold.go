package kernels

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Hold takes a shared flock on a cached file (a kernel's bzImage, an
// image) so that no GC or prune removes it while it is in use: a remover
// takes the exclusive lock without waiting and skips what is held. Callers
// must call the returned release.
func Hold(path string) (func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to hold %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to hold %s: %w", path, err)
	}
	// A remover may have unlinked the file between open and flock.
	var held, now unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &now) != nil || held.Ino != now.Ino || held.Dev != now.Dev {
		f.Close()
		return nil, fmt.Errorf("failed to hold %s: it was removed", path)
	}
	return func() { f.Close() }, nil
}
