package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEachTask(t *testing.T) {
	proc := t.TempDir()
	for _, d := range []string{"1/task/1", "1/task/7", "12/task/12", "self/task/3", "4/task/x", "5/fd/5"} {
		if err := os.MkdirAll(filepath.Join(proc, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	for tid, dir := range eachTask(proc) {
		if filepath.Base(dir) != filepath.Base(filepath.Join(proc, dir)) || !filepath.IsAbs(dir) {
			t.Errorf("tid %d: folder %q", tid, dir)
		}
		got = append(got, tid)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 7, 12}) {
		t.Errorf("tasks %v, want the numeric tasks 1 7 12", got)
	}
	for tid := range eachTask(proc) {
		if tid != 1 && tid != 7 && tid != 12 {
			t.Errorf("stray task %d", tid)
		}
		break // stopping early must not panic
	}
}
