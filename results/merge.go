package results

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Merge gathers the run folders found under dirs (shards of one CI
// matrix) into out: each run folder is copied to out/<its name>, and
// out/junit.xml holds one suite per run. It returns the runs, oldest first.
func Merge(dirs []string, out string) ([]*Result, error) {
	var runs []string
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
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
	var rs []*Result
	seen := map[string]string{}
	for _, run := range runs {
		r, err := Read(filepath.Join(run, "result.json"))
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
	return rs, WriteJUnit(filepath.Join(out, "junit.xml"), rs)
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
