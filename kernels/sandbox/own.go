package sandbox

import (
	"errors"
	"fmt"
	"os"

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
		if err := unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return &os.PathError{Op: "stat", Path: child, Err: err}
		}
		if int(st.Uid) == uid && int(st.Gid) == gid {
			continue
		}
		if uid == UID && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
			continue
		}
		if err := unix.Fchownat(fd, e.Name(), uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "chown", Path: child, Err: err}
		}
	}
	return nil
}
