package report

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"

	"napilab/results"
)

// Merge gathers the run folders found under dirs (shards of one CI
// matrix) into out: each run folder is copied to out/<its name>, and
// out/junit.xml holds one suite per run. It returns the runs, oldest first.
// out is created, or must be a folder (not a link) of the caller's that
// no one else may write; everything below it is created through its fd
// without following a link (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS).
// The shards hold at most MaxMergeTotal bytes in MaxMergeFiles entries.
func Merge(dirs []string, out string) ([]*results.Result, error) {
	var runs []string
	var total, count int64
	for _, d := range dirs {
		d, err := filepath.EvalSymlinks(d) // the folders named are the user's; links inside are refused
		if err != nil {
			return nil, fmt.Errorf("failed to read shard folder: %w", err)
		}
		err = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := mergeable(p, e); err != nil {
				return err
			}
			if count++; count > MaxMergeFiles {
				return fmt.Errorf("the shards hold over %d files and folders: not merged", MaxMergeFiles)
			}
			if !e.IsDir() {
				fi, err := e.Info()
				if err != nil {
					return err
				}
				if total += fi.Size(); total > mergeTotal {
					return fmt.Errorf("the shards hold over %d bytes: not merged", mergeTotal)
				}
			}
			if !e.IsDir() && e.Name() == "result.json" {
				runs = append(runs, filepath.Dir(p))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("failed to read shard folder: %w", err)
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no run folders (result.json) under %v", dirs)
	}
	dst, err := openOut(out)
	if err != nil {
		return nil, err
	}
	defer dst.close()
	var rs []*results.Result
	seen := map[string]string{}
	budget := mergeTotal // the files may grow between the walk and the copy
	for _, run := range runs {
		r, err := results.Read(filepath.Join(run, "result.json"))
		if err != nil {
			return nil, err
		}
		name := filepath.Base(run)
		if prev, ok := seen[name]; ok {
			return nil, fmt.Errorf("two runs named %s: %s and %s", name, prev, run)
		}
		seen[name] = run
		if err := dst.copyTree(run, name, &budget); err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Started.Before(rs[j].Started) })
	var junit bytes.Buffer
	if err := writeJUnitTo(&junit, rs...); err != nil {
		return nil, err
	}
	return rs, dst.replace("junit.xml", junit.Bytes())
}

// Merge's bounds: each file, all of the shards' bytes, and their files and
// folders.
const (
	MaxMergeFile  = 1 << 30
	MaxMergeTotal = 16 << 30
	MaxMergeFiles = 1 << 20
)

// mergeTotal is MaxMergeTotal (tests lower it).
var mergeTotal int64 = MaxMergeTotal

// mergeable refuses what Merge does not copy: symbolic links (it never
// follows them) and devices, FIFOs and sockets.
func mergeable(p string, e fs.DirEntry) error {
	switch t := e.Type(); {
	case t&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: merge does not follow links", p)
	case !t.IsDir() && !t.IsRegular():
		return fmt.Errorf("%s is not a regular file (%s): not merged", p, t)
	}
	return nil
}

// mergeOut is Merge's destination folder, open.
type mergeOut struct {
	fd   int
	path string
}

// openOut creates out (its parents are the user's to name) or opens the
// folder there: never through a link, and only a folder the caller owns
// that group and others may not write, so that no one else can plant a
// link or a hard link in it while the merge runs.
func openOut(out string) (*mergeOut, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create the merged folder: %w", err)
	}
	if err := unix.Mkdir(out, 0o755); err != nil && err != unix.EEXIST {
		return nil, fmt.Errorf("failed to create the merged folder %s: %w", out, err)
	}
	fd, err := unix.Open(out, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open the merged folder %s (a link is refused): %w", out, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("failed to open the merged folder %s: %w", out, err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("the merged folder %s is not yours alone to write (owner %d, mode %o): not merged", out, st.Uid, st.Mode&0o7777)
	}
	return &mergeOut{fd: fd, path: out}, nil
}

func (m *mergeOut) close() { unix.Close(m.fd) }

// beneath resolves below the merged folder without following any link.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// mkdir creates the folder rel (its parent exists) beneath m; one there
// already is kept if it is a folder.
func (m *mergeOut) mkdir(rel string) error {
	parent, err := m.openDir(filepath.Dir(rel))
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := unix.Mkdirat(parent, filepath.Base(rel), 0o755); err != nil && err != unix.EEXIST {
		return fmt.Errorf("failed to create %s: %w", filepath.Join(m.path, rel), err)
	}
	fd, err := m.openDir(rel) // a link there is refused
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// openDir opens the folder rel beneath m.
func (m *mergeOut) openDir(rel string) (int, error) {
	fd, err := unix.Openat2(m.fd, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
	if err != nil {
		return -1, fmt.Errorf("failed to open %s (links are refused): %w", filepath.Join(m.path, rel), err)
	}
	return fd, nil
}

// create opens the regular file rel beneath m for writing, empty: a link
// (symbolic or hard) or anything but a regular file there is refused.
func (m *mergeOut) create(rel string) (*os.File, error) {
	name := filepath.Join(m.path, rel)
	fd, err := unix.Openat2(m.fd, rel, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY,
		Mode: 0o644, Resolve: beneath})
	if err != nil {
		return nil, fmt.Errorf("failed to create %s (links are refused): %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	switch {
	case err != nil:
	case st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1:
		err = fmt.Errorf("%s is not a regular file of one link: not overwritten", name)
	default:
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// replace writes dir/name beneath m through a temporary file renamed over
// it (a link there is replaced, not followed).
func (m *mergeOut) replace(name string, data []byte) error {
	tmp := "." + name + ".tmp"
	f, err := m.create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(m.fd, tmp, m.fd, name)
	}
	if err != nil {
		unix.Unlinkat(m.fd, tmp, 0)
		return fmt.Errorf("failed to write %s: %w", filepath.Join(m.path, name), err)
	}
	return nil
}

// copyTree copies the run folder src to m/name, taking what it copies
// from budget.
func (m *mergeOut) copyTree(src, name string, budget *int64) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := mergeable(p, e); err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(name, rel)
		if e.IsDir() {
			return m.mkdir(target)
		}
		return m.copyFile(p, target, budget)
	})
}

// copyFile copies a regular file of at most MaxMergeFile bytes, never
// through a link, streaming.
func (m *mergeOut) copyFile(src, rel string, budget *int64) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() > MaxMergeFile {
		return fmt.Errorf("%s: not a regular file of at most %d bytes: not merged", src, int64(MaxMergeFile))
	}
	out, err := m.create(rel)
	if err != nil {
		return err
	}
	limit := min(int64(MaxMergeFile), *budget)
	n, err := io.Copy(out, io.LimitReader(in, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	*budget -= n
	if err == nil && n > limit {
		err = fmt.Errorf("%s grew over %d bytes while merged (or the shards over %d in all)", src, int64(MaxMergeFile), mergeTotal)
	}
	return err
}
