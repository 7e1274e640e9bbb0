package runner

import (
	"context"
	"fmt"
	"strings"

	"napilab/internal/wire"
	"napilab/scenarios"
)

// tooFewError is a sched step that found fewer tasks than it wants: an
// expectation about the kernel's threads that failed (FAIL), like a wait
// that never held.
type tooFewError struct {
	task    string
	want    int
	changed []wire.Task
}

func (e *tooFewError) Error() string {
	return fmt.Sprintf("%d tasks named %s* changed, want at least %d%s", len(e.changed), e.task, e.want, taskList(e.changed))
}

// sched tunes the tasks a sched step names and checks there were enough.
func (t *timeline) sched(ctx context.Context, x *scenarios.Sched) error {
	var changed []wire.Task
	args := wire.Sched{Task: x.Task, CPUs: x.CPUs, Policy: x.Policy, Priority: x.Priority, Nice: x.Nice}
	if err := t.ctl.call(ctx, wire.OpSched, args, &changed); err != nil {
		return err
	}
	if t.logf != nil {
		t.logf("sched %s: %d tasks%s", x.Task, len(changed), taskList(changed))
	}
	if len(changed) < x.MinTasks() {
		return &tooFewError{task: x.Task, want: x.MinTasks(), changed: changed}
	}
	return nil
}

// taskList writes ": napi/eth0-3 (pid 120), …", or "" for none.
func taskList(tasks []wire.Task) string {
	if len(tasks) == 0 {
		return ""
	}
	var parts []string
	for _, tk := range tasks {
		parts = append(parts, fmt.Sprintf("%s (pid %d)", tk.Comm, tk.PID))
	}
	return ": " + strings.Join(parts, ", ")
}
