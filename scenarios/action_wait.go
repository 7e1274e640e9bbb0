package scenarios

import (
	"context"
	"fmt"
	"time"
)

// Wait polls until a file holds a value or enough threads exist; its
// Timeout (default: the step deadline) passing is a failure, not a hang.
type Wait struct {
	Path    string   `yaml:"path"`
	Netns   string   `yaml:"netns"`
	Equals  string   `yaml:"equals"`
	Threads string   `yaml:"threads"` // comm prefix
	Min     int      `yaml:"min"`     // threads wanted, default 1
	Absent  bool     `yaml:"absent"`  // wait for no such thread instead
	Timeout Duration `yaml:"timeout"`
}

func (w *Wait) check(k *checker, st *Step) {
	k.checkNetns(st.Pos, w.Netns)
	if (w.Path == "") == (w.Threads == "") {
		k.c.add(st.Pos, "wait needs path: (with equals:) or threads:")
	}
	if st.Every > 0 {
		k.c.add(st.Pos, "wait polls by itself: drop every:")
	}
}

func (w *Wait) explain() (time.Duration, string) {
	cond := fmt.Sprintf("%s = %q", w.Path, w.Equals)
	if w.Threads != "" {
		cond = fmt.Sprintf(">= %d %s* threads", max(w.Min, 1), w.Threads)
		if w.Absent {
			cond = fmt.Sprintf("no %s* thread", w.Threads)
		}
	}
	return 0, fmt.Sprintf("wait until %s (up to %v)", cond, or(w.Timeout.D().String(), "the deadline"))
}

func (w *Wait) label() string { return "wait" }

func (w *Wait) run(ctx context.Context, lab Lab, _ *Step, _ int) error { return lab.Wait(ctx, w) }
