package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Own gives path and everything under it to UID:GID so that a sandboxed
// command may write there. Entries already owned are left alone, so calling
// it on every use of a cache folder costs one walk. No-op when not Active.
func Own(path string) error { return chownTree(path, UID, GID, false) }

// OwnDirs gives only the folders under path to UID:GID: a sandboxed command
// may then add, rename and remove files (patch replaces a file by renaming
// a new one over it) but not write into files it does not own, such as
// those of a hardlink copy that are shared with a pristine tree.
func OwnDirs(path string) error { return chownTree(path, UID, GID, true) }

// Disown gives path and everything under it back to lab's user once the
// sandboxed work in it is done, so that later sandboxed commands cannot
// change it.
func Disown(path string) error { return chownTree(path, os.Geteuid(), os.Getegid(), false) }

func chownTree(path string, uid, gid int, dirsOnly bool) error {
	if !Active() {
		return nil
	}
	// Another build may add and remove files meanwhile (ccache is shared):
	// a file gone before its turn needs no owner.
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil && p == path {
			return err
		}
		if err != nil {
			return goneOK(err)
		}
		if dirsOnly && !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return goneOK(err)
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid && int(st.Gid) == gid {
			return nil
		}
		return goneOK(os.Lchown(p, uid, gid))
	})
	if err != nil {
		return fmt.Errorf("failed to give %s to uid %d: %w", path, uid, err)
	}
	return nil
}

// goneOK drops an error that says the file is gone.
func goneOK(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
