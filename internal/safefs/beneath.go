package safefs

import (
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNotBeneath marks a name that leads through a symlink or out of the
// folder it is looked up in: Dir never follows one.
var ErrNotBeneath = errors.New("leads through a symlink or out of the folder (not followed)")

// Dir is a folder held open by an O_PATH fd. Its methods take names
// relative to it and resolve them ResolveBeneath it without following any
// symlink (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS),
// then act on the last component through its parent's fd: a link planted
// on the way (by a tree, a patch or a sandboxed build) is an error, never a
// write elsewhere. Callers must Close it.
type Dir struct {
	fd   int
	path string
}

// OpenDir opens the folder at path, which must not itself be a symlink.
func OpenDir(dir string) (*Dir, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, beneathErr("open", dir, err)
	}
	return &Dir{fd: fd, path: dir}, nil
}

// Close releases the folder's fd.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Path is the path the folder was opened at.
func (d *Dir) Path() string { return d.path }

// Lstat returns the status of rel itself (a symlink is not followed).
func (d *Dir) Lstat(rel string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	err := d.at(rel, "lstat", func(fd int, base string) error {
		return unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// Remove removes the file (or symlink) rel.
func (d *Dir) Remove(rel string) error {
	return d.at(rel, "remove", func(fd int, base string) error { return unix.Unlinkat(fd, base, 0) })
}

// RemoveDir removes the empty folder rel.
func (d *Dir) RemoveDir(rel string) error {
	return d.at(rel, "rmdir", func(fd int, base string) error { return unix.Unlinkat(fd, base, unix.AT_REMOVEDIR) })
}

// Mkdir creates the folder rel; its parent must exist.
func (d *Dir) Mkdir(rel string, perm os.FileMode) error {
	return d.at(rel, "mkdir", func(fd int, base string) error { return unix.Mkdirat(fd, base, uint32(perm.Perm())) })
}

// Chtimes sets the access and modification times of rel itself.
func (d *Dir) Chtimes(rel string, t time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	return d.at(rel, "chtimes", func(fd int, base string) error {
		return unix.UtimesNanoAt(fd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Link makes dst/dstRel a new hard link to src/srcRel itself (a symlink
// there is linked, not followed); dstRel must not exist.
func Link(src *Dir, srcRel string, dst *Dir, dstRel string) error {
	return src.at(srcRel, "link", func(sfd int, sbase string) error {
		return dst.at(dstRel, "link", func(dfd int, dbase string) error {
			return unix.Linkat(sfd, sbase, dfd, dbase, 0)
		})
	})
}

// at runs op on the last component of rel with an fd of its parent,
// opened ResolveBeneath d without following symlinks.
func (d *Dir) at(rel, op string, fn func(fd int, base string) error) error {
	name := d.path + "/" + rel
	parent, base := path.Split(rel)
	if base == "" || base == "." || base == ".." || path.IsAbs(rel) {
		return &os.PathError{Op: op, Path: name, Err: fmt.Errorf("%w: %q is not a clean relative name", ErrNotBeneath, rel)}
	}
	fd := d.fd
	if parent != "" {
		pfd, err := unix.Openat2(d.fd, parent, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: ResolveBeneath})
		if err != nil {
			return beneathErr(op, name, err)
		}
		defer unix.Close(pfd)
		fd = pfd
	}
	if err := fn(fd, base); err != nil {
		return beneathErr(op, name, err)
	}
	return nil
}

// beneathErr wraps errno in a PathError; ELOOP and EXDEV (what openat2 says
// of a symlink or a way out) also match ErrNotBeneath.
func beneathErr(op, name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		err = fmt.Errorf("%w: %w", ErrNotBeneath, err)
	}
	return &os.PathError{Op: op, Path: name, Err: err}
}
