package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"napilab/internal/wire"
	"napilab/scenarios"
)

// waitError is a wait whose condition did not hold within its timeout: an
// expectation about the kernel that failed (FAIL).
type waitError struct {
	timeout time.Duration
	last    string // what was seen last
}

func (e *waitError) Error() string {
	return fmt.Sprintf("condition not met within %v (last seen: %s)", e.timeout, e.last)
}

// wait polls until the condition holds; running out of Timeout is an error.
func (t *timeline) wait(ctx context.Context, w *scenarios.Wait) error {
	timeout := w.Timeout.D()
	if timeout == 0 {
		timeout = t.s.Defaults.Deadline.D()
	}
	until := time.Now().Add(timeout)
	var last string
	for {
		ok, seen, err := t.holds(ctx, w)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		last = seen
		if time.Now().After(until) {
			return &waitError{timeout: timeout, last: last}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// holds checks a wait condition once.
func (t *timeline) holds(ctx context.Context, w *scenarios.Wait) (bool, string, error) {
	if w.Path != "" {
		var v string
		if err := t.ctl.call(ctx, wire.OpRead, wire.File{Path: w.Path, Netns: w.Netns}, &v); err != nil {
			return false, "", err
		}
		v = strings.TrimSpace(v)
		return v == w.Equals, fmt.Sprintf("%s = %q", w.Path, v), nil
	}
	var s wire.Sample
	src := wire.PrefixThreads + w.Threads
	if err := t.ctl.call(ctx, wire.OpSample, wire.SampleArgs{Sources: []string{src}}, &s); err != nil {
		return false, "", err
	}
	n := countLines(s.Values[src])
	if w.Absent {
		return n == 0, fmt.Sprintf("%d %s* threads", n, w.Threads), nil
	}
	return n >= max(w.Min, 1), fmt.Sprintf("%d %s* threads", n, w.Threads), nil
}

func countLines(s string) int {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}
