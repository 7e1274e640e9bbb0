package images

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"napilab/kernels"
)

// Hold takes a shared flock on the image at path so that no prune removes
// it while a guest boots it (see kernels.Hold). Callers must call the
// returned release.
func Hold(path string) (func(), error) { return kernels.Hold(path) }

// imagesLock is the lock file that serializes composing and pruning images.
func imagesLock(dir string) string { return filepath.Join(dir, "lock") }

// pruneComposed keeps the keep newest composed images in dir and never
// removes one a run holds (see Hold). The caller holds imagesLock. It
// returns the removed paths.
func pruneComposed(dir string, keep int) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, "debian-img-*.cpio"))
	if len(paths) <= keep {
		return nil
	}
	type aged struct {
		path string
		mod  time.Time
	}
	var all []aged
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			all = append(all, aged{p, fi.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return b.mod.Compare(a.mod) })
	var removed []string
	for _, a := range all[min(keep, len(all)):] {
		if removeUnheld(a.path) == nil {
			removed = append(removed, a.path)
		}
	}
	return removed
}

// errHeld says an image is in use.
var errHeld = errors.New("image in use")

// removeUnheld removes path unless someone holds it.
func removeUnheld(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return errHeld
		}
		return err
	}
	return os.Remove(path)
}
