package report

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"napilab/results"
)

// Merge gathers the run folders found under dirs (shards of one CI
// matrix) into out: each run folder is copied to out/<its name>, and
// out/junit.xml holds one suite per run. It returns the runs, oldest first.
func Merge(dirs []string, out string) ([]*results.Result, error) {
	var runs []string
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
	var rs []*results.Result
	seen := map[string]string{}
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
		if err := copyTree(run, filepath.Join(out, name)); err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Started.Before(rs[j].Started) })
	return rs, WriteJUnit(filepath.Join(out, "junit.xml"), rs...)
}

// MaxMergeFile bounds each file Merge copies.
const MaxMergeFile = 1 << 30

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

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := mergeable(p, e); err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return copyFile(p, target)
	})
}

// copyFile copies a regular file of at most MaxMergeFile bytes, never
// through a link, streaming.
func copyFile(src, dst string) error {
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
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(in, MaxMergeFile+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > MaxMergeFile {
		err = fmt.Errorf("%s grew over %d bytes while merged", src, int64(MaxMergeFile))
	}
	return err
}
