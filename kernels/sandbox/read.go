package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ReadBeneath reads the regular file rel below dir, which a sandboxed
// command could write, without following a symlink or leaving dir: lab,
// as root, must not copy out /etc/shadow planted as work/.../bzImage.
func ReadBeneath(dir, rel string) ([]byte, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fd, err := unix.Openat2(int(d.Fd()), rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY, Resolve: beneath})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir + "/" + rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir+"/"+rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", f.Name())
	}
	return io.ReadAll(f)
}

// beneath resolves below a folder without following any symlink.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// CreateBeneath creates the file rel below dir anew (replacing one there),
// and the folders on its way, without following a symlink or leaving dir: what a
// sandboxed command wrote there cannot turn lab's write (as root) into a
// write elsewhere.
func CreateBeneath(dir, rel string, perm os.FileMode) (*os.File, error) {
	name := filepath.Join(dir, rel)
	pfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	parts := strings.Split(filepath.Clean(rel), "/")
	for _, part := range parts[:len(parts)-1] {
		if err := unix.Mkdirat(pfd, part, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(pfd)
			return nil, &os.PathError{Op: "mkdir", Path: name, Err: err}
		}
		fd, err := unix.Openat2(pfd, part, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
		unix.Close(pfd)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		pfd = fd
	}
	defer unix.Close(pfd)
	// A new file: neither an old one's mode nor a link to another file.
	base := parts[len(parts)-1]
	if err := unix.Unlinkat(pfd, base, 0); err != nil && err != unix.ENOENT {
		return nil, &os.PathError{Op: "remove", Path: name, Err: err}
	}
	fd, err := unix.Openat2(pfd, base, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC,
		Mode: uint64(perm.Perm()), Resolve: beneath})
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// WriteBeneath writes data to the file rel below dir as CreateBeneath does.
func WriteBeneath(dir, rel string, data []byte, perm os.FileMode) error {
	f, err := CreateBeneath(dir, rel, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
