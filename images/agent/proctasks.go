package agent

import (
	"iter"
	"path/filepath"
	"strconv"
)

// eachTask yields every task (threads included) under proc ("/proc") as
// its tid and its /proc/PID/task/TID folder. Tasks that exit meanwhile are
// the caller's to skip: their files no longer read.
func eachTask(proc string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		dirs, _ := filepath.Glob(filepath.Join(proc, "[0-9]*", "task", "[0-9]*"))
		for _, dir := range dirs {
			tid, err := strconv.Atoi(filepath.Base(dir))
			if err != nil {
				continue
			}
			if !yield(tid, dir) {
				return
			}
		}
	}
}
