package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
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

// chownTree walks path by folder descriptors, never following a symlink,
// so that a sandboxed command swapping a folder for a link meanwhile (the
// uid's files can change under the walk) cannot redirect a chown outside.
// Links are chowned themselves; a file with other hard links is given to
// UID only if it already is (its other names may be outside).
func chownTree(path string, uid, gid int, dirsOnly bool) error {
	if !Active() {
		return nil
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		// A file (or link) of its own: itself, through its folder's fd.
		dfd, derr := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if derr != nil {
			return fmt.Errorf("failed to give %s to uid %d: %w", path, uid, &os.PathError{Op: "open", Path: path, Err: derr})
		}
		defer unix.Close(dfd)
		if dirsOnly {
			return nil
		}
		if err := chownEntry(dfd, filepath.Base(path), path, uid, gid); err != nil {
			return fmt.Errorf("failed to give %s to uid %d: %w", path, uid, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to give %s to uid %d: %w", path, uid, &os.PathError{Op: "open", Path: path, Err: err})
	}
	if err := chownDir(fd, path, uid, gid, dirsOnly); err != nil {
		return fmt.Errorf("failed to give %s to uid %d: %w", path, uid, err)
	}
	return nil
}

// chownDir chowns the open folder fd and everything below it; it closes fd.
func chownDir(fd int, name string, uid, gid int, dirsOnly bool) error {
	dir := os.NewFile(uintptr(fd), name)
	defer dir.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if int(st.Uid) != uid || int(st.Gid) != gid {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return &os.PathError{Op: "chown", Path: name, Err: err}
		}
	}
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range entries {
		child := name + "/" + e.Name()
		cfd, err := unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			if err := chownDir(cfd, child, uid, gid, dirsOnly); err != nil {
				return err
			}
			continue
		case errors.Is(err, unix.ENOENT):
			continue // gone meanwhile: needs no owner
		case !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP):
			return &os.PathError{Op: "open", Path: child, Err: err}
		}
		if dirsOnly {
			continue
		}
		if err := chownEntry(fd, e.Name(), child, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// chownEntry gives the entry n of folder dfd (not a folder: a file, a link
// or a special file) to uid:gid through an O_PATH fd of the entry itself,
// so that what is checked is what is chowned.
func chownEntry(dfd int, n, name string, uid, gid int) error {
	fd, err := unix.Openat(dfd, n, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if int(st.Uid) == uid && int(st.Gid) == gid {
		return nil
	}
	if uid == UID && st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&unix.S_IFMT != unix.S_IFLNK && st.Nlink > 1 {
		return nil // its other names may be outside: not given to the sandbox
	}
	if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
		return &os.PathError{Op: "chown", Path: name, Err: err}
	}
	return nil
}
