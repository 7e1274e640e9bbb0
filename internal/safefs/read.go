package safefs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultReadMax is ReadBeneath's cap: the largest file lab copies out of a
// build (a vmlinux; kernel archives cap each file the same).
const DefaultReadMax = 1 << 30

// ReadBeneath is ReadBeneathMax with DefaultReadMax. Prefer ReadBeneathMax
// with a cap suited to the file.
func ReadBeneath(dir, rel string) ([]byte, error) {
	return ReadBeneathMax(dir, rel, DefaultReadMax)
}

// ReadBeneathMax reads the regular file rel below dir, which a sandboxed
// command could write, without following a symlink or leaving dir: lab,
// as root, must not copy out /etc/shadow planted as work/.../bzImage. A
// FIFO or device is refused without blocking, a file over max bytes too.
func ReadBeneathMax(dir, rel string, max int64) ([]byte, error) {
	return readBeneath(dir, rel, max, ResolveBeneath)
}

// ReadWithin reads the regular file rel below dir as ReadBeneathMax does,
// but follows symlinks that stay below dir: for the source tree, whose own
// links (tools/testing/selftests/drivers/net/dsa/lib.sh) point inside it.
func ReadWithin(dir, rel string, max int64) ([]byte, error) {
	return readBeneath(dir, rel, max, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_MAGICLINKS)
}

func readBeneath(dir, rel string, max int64, resolve uint64) ([]byte, error) {
	f, err := openFile(dir, rel, resolve)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, over the %d a lab reads", f.Name(), fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max { // it grew while read
		return nil, fmt.Errorf("%s is over the %d bytes a lab reads", f.Name(), max)
	}
	return data, nil
}

// openFile opens the regular file rel below dir for reading. O_NONBLOCK
// makes opening a FIFO return at once (a regular file ignores it); fstat
// then refuses anything but a regular file.
func openFile(dir, rel string, resolve uint64) (*os.File, error) {
	d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(d)
	name := filepath.Join(dir, rel)
	fd, err := unix.Openat2(d, rel, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK, Resolve: resolve})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	return f, nil
}

// ResolveBeneath resolves below a folder without following any symlink.
const ResolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// MkdirBeneath creates the folder rel below dir and the folders on its way
// (those there already are kept) without following a symlink or leaving dir.
func MkdirBeneath(dir, rel string, perm os.FileMode) error {
	fd, err := mkdirBeneath(dir, strings.Split(filepath.Clean(rel), "/"), perm)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// mkdirBeneath creates the folders parts below dir and returns an O_PATH fd
// of the last (of dir itself when parts is empty).
func mkdirBeneath(dir string, parts []string, perm os.FileMode) (int, error) {
	pfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	name := filepath.Join(append([]string{dir}, parts...)...)
	for _, part := range parts {
		if err := unix.Mkdirat(pfd, part, uint32(perm.Perm())); err != nil && err != unix.EEXIST {
			unix.Close(pfd)
			return -1, &os.PathError{Op: "mkdir", Path: name, Err: err}
		}
		fd, err := unix.Openat2(pfd, part, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: ResolveBeneath})
		unix.Close(pfd)
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: name, Err: err}
		}
		pfd = fd
	}
	return pfd, nil
}

// CreateBeneath creates the file rel below dir anew (replacing one there),
// and the folders on its way, without following a symlink or leaving dir: what a
// sandboxed command wrote there cannot turn lab's write (as root) into a
// write elsewhere.
func CreateBeneath(dir, rel string, perm os.FileMode) (*os.File, error) {
	name := filepath.Join(dir, rel)
	parts := strings.Split(filepath.Clean(rel), "/")
	pfd, err := mkdirBeneath(dir, parts[:len(parts)-1], 0o755)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	// A new file: neither an old one's mode nor a link to another file.
	base := parts[len(parts)-1]
	if err := unix.Unlinkat(pfd, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, &os.PathError{Op: "remove", Path: name, Err: err}
	}
	fd, err := unix.Openat2(pfd, base, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC,
		Mode: uint64(perm.Perm()), Resolve: ResolveBeneath})
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

// ReadRegular reads a regular file of at most limit bytes. Anything else
// (a device, a FIFO, a folder, a larger file) is refused without reading
// it, so its content never reaches an error message. It follows symlinks;
// callers that must not, check with os.Lstat first.
func ReadRegular(path string, limit int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the limit of %d", path, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew over the limit of %d bytes", path, limit)
	}
	return b, nil
}
