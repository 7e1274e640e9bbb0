package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"napilab/internal/safefs"
	"os"
	"path"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// Entry is one folder, file or symlink of a tree, as Seal and Manifest list
// it.
type Entry struct {
	// Name is the path below the tree's root, slash-separated; "." is the root.
	Name string `json:"name"`
	// Type is "dir", "file" or "link".
	Type string `json:"type"`
	// Mode is a folder's or file's permission bits (0 for a link).
	Mode uint32 `json:"mode,omitempty"`
	// Size is a file's size in bytes.
	Size int64 `json:"size,omitempty"`
	// SHA256 is a file's content hash, hex.
	SHA256 string `json:"sha256,omitempty"`
	// Target is a link's target (never followed).
	Target string `json:"target,omitempty"`
}

// Limits bound a tree that Seal or Manifest walks.
type Limits struct {
	// Bytes bounds the files' total size.
	Bytes int64
	// Entries bounds the number of folders, files and links.
	Entries int
	// Depth bounds how deep folders nest.
	Depth int
}

// Seal gives the tree at dir to lab's user, by fd, removes every write and
// set-id bit, fsyncs every file and folder and lists the tree, each folder's
// entries in name order. Call it only once no sandboxed command can write
// there any more (its make has exited: its pid namespace is gone). A FIFO,
// socket or device, a file with a second hard link (one outside the tree
// would be changed too) or a tree beyond lim is refused.
func Seal(dir string, lim Limits) ([]Entry, error) {
	return walkTree(dir, lim, true)
}

// Manifest lists a sealed tree at dir as Seal does, changing nothing. An
// entry lab's user does not own is refused: the tree is not sealed.
func Manifest(dir string, lim Limits) ([]Entry, error) {
	return walkTree(dir, lim, false)
}

func walkTree(dir string, lim Limits, seal bool) ([]Entry, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	w := &walker{root: dir, lim: lim, seal: seal, uid: os.Geteuid(), gid: os.Getegid()}
	if err := w.dir(os.NewFile(uintptr(fd), dir), ".", 0); err != nil {
		return nil, err
	}
	return w.out, nil
}

// walker walks one tree by fd, below its root and following no link.
type walker struct {
	root     string
	lim      Limits
	seal     bool
	uid, gid int
	bytes    int64
	out      []Entry
}

// dir lists (and seals) the open folder d, named name below the root, and
// everything below it; it closes d.
func (w *walker) dir(d *os.File, name string, depth int) error {
	defer d.Close()
	fi, err := w.own(d, name)
	if err != nil {
		return err
	}
	w.out = append(w.out, Entry{Name: name, Type: "dir", Mode: perm(fi, w.seal)})
	var names []string
	for {
		batch, err := d.Readdirnames(1024)
		names = append(names, batch...)
		if len(w.out)+len(names) > w.lim.Entries {
			return fmt.Errorf("%s holds over %d entries", w.root, w.lim.Entries)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("failed to list %s: %w", w.path(name), err)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if err := w.entry(int(d.Fd()), path.Join(name, n), n, depth); err != nil {
			return err
		}
	}
	if w.seal {
		if err := d.Sync(); err != nil {
			return fmt.Errorf("failed to sync %s: %w", w.path(name), err)
		}
	}
	return nil
}

// entry lists (and seals) n of the folder dfd, named name below the root.
func (w *walker) entry(dfd int, name, n string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "stat", Path: w.path(name), Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if depth+1 > w.lim.Depth {
			return fmt.Errorf("%s nests folders over %d deep", w.root, w.lim.Depth)
		}
		fd, err := unix.Openat2(dfd, n, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: safefs.ResolveBeneath})
		if err != nil {
			return &os.PathError{Op: "open", Path: w.path(name), Err: err}
		}
		return w.dir(os.NewFile(uintptr(fd), w.path(name)), name, depth+1)
	case unix.S_IFREG:
		return w.file(dfd, name, n)
	case unix.S_IFLNK:
		return w.link(dfd, name, n, &st)
	}
	return fmt.Errorf("%s is not a file, folder or link (mode %o)", w.path(name), st.Mode)
}

// file lists (and seals) the regular file n of dfd with its hash.
func (w *walker) file(dfd int, name, n string) error {
	fd, err := unix.Openat2(dfd, n, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_CLOEXEC, Resolve: safefs.ResolveBeneath})
	if err != nil {
		return &os.PathError{Op: "open", Path: w.path(name), Err: err}
	}
	f := os.NewFile(uintptr(fd), w.path(name))
	defer f.Close()
	// Checked before it is changed: a file with another name elsewhere
	// is refused untouched.
	if fi, err := f.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s)", f.Name(), fi.Mode().Type())
	} else if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink != 1 {
		return fmt.Errorf("%s has another hard link", f.Name())
	}
	fi, err := w.own(f, name)
	if err != nil {
		return err
	}
	if w.bytes += fi.Size(); w.bytes > w.lim.Bytes {
		return fmt.Errorf("%s holds over %d bytes", w.root, w.lim.Bytes)
	}
	h := sha256.New()
	if n, err := io.Copy(h, io.LimitReader(f, fi.Size())); err != nil || n != fi.Size() {
		return fmt.Errorf("failed to read %s: %d of %d bytes: %v", f.Name(), n, fi.Size(), err)
	}
	if w.seal {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("failed to sync %s: %w", f.Name(), err)
		}
	}
	w.out = append(w.out, Entry{Name: name, Type: "file", Mode: perm(fi, w.seal), Size: fi.Size(), SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// link lists (and gives to lab's user) the symlink n of dfd, never
// following it.
func (w *walker) link(dfd int, name, n string, st *unix.Stat_t) error {
	buf := make([]byte, unix.PathMax)
	k, err := unix.Readlinkat(dfd, n, buf)
	if err != nil {
		return &os.PathError{Op: "readlink", Path: w.path(name), Err: err}
	}
	if err := w.owned(int(st.Uid), int(st.Gid), name); err != nil {
		return err
	}
	if w.seal {
		if err := unix.Fchownat(dfd, n, w.uid, w.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &os.PathError{Op: "chown", Path: w.path(name), Err: err}
		}
	}
	w.out = append(w.out, Entry{Name: name, Type: "link", Target: string(buf[:k])})
	return nil
}

// own gives the open f to lab's user and removes its write and set-id bits
// when sealing; otherwise it checks that lab's user owns it.
func (w *walker) own(f *os.File, name string) (os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("failed to stat %s", f.Name())
	}
	if err := w.owned(int(st.Uid), int(st.Gid), name); err != nil {
		return nil, err
	}
	if w.seal {
		if err := f.Chown(w.uid, w.gid); err != nil {
			return nil, fmt.Errorf("failed to give %s to uid %d: %w", f.Name(), w.uid, err)
		}
		// Perm() has no set-id or sticky bit: chmod to it clears them.
		if err := f.Chmod(os.FileMode(perm(fi, true))); err != nil {
			return nil, fmt.Errorf("failed to make %s read-only: %w", f.Name(), err)
		}
	}
	return fi, nil
}

// owned refuses, when checking a sealed tree, an entry that is not lab's.
func (w *walker) owned(uid, gid int, name string) error {
	if !w.seal && (uid != w.uid || gid != w.gid) {
		return fmt.Errorf("%s is owned by %d:%d, not sealed", w.path(name), uid, gid)
	}
	return nil
}

// perm is fi's permission bits as Seal leaves them: no write bit, but
// for a folder its owner's when lab does not run as root (there is no
// sandbox then, and only the owner's write bit lets it remove the tree).
func perm(fi os.FileInfo, sealed bool) uint32 {
	p := uint32(fi.Mode().Perm())
	if sealed {
		p &^= 0o222
		if fi.IsDir() && !Active() {
			p |= 0o200
		}
	}
	return p
}

func (w *walker) path(name string) string { return path.Join(w.root, name) }
