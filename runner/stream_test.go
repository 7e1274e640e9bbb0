package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"napilab/results"
)

// TestRunStream checks RunStream's order with one guest at a time: each
// batch longest first (the first batch's shortest before them), batches in the order they come, and with UntilFail
// no job after a FAIL, returning without waiting for batches to close.
func TestRunStream(t *testing.T) {
	job := func(name string, est time.Duration) Job {
		return Job{Name: name, Estimate: est, Cfg: Config{OutDir: name}}
	}
	for _, tc := range []struct {
		name      string
		batches   [][]Job
		untilFail bool
		fail      string // the job that FAILs
		want      []string
	}{
		{name: "batches in order, each longest first, the first verdict soonest",
			batches: [][]Job{{job("a1", 2), job("a2", 1), job("a3", 3)}, {job("b1", 3)}, {job("c1", 1), job("c2", 2)}},
			want:    []string{"a2", "a3", "a1", "b1", "c2", "c1"}},
		{name: "until fail stops at the FAIL", untilFail: true, fail: "a1",
			batches: [][]Job{{job("a1", 2), job("a2", 1), job("a3", 1)}, {job("b1", 1)}},
			want:    []string{"a3", "a1"}},
		{name: "until fail waits for no next batch", untilFail: true, fail: "a1",
			batches: [][]Job{{job("a1", 1)}},
			want:    []string{"a1"}},
		{name: "a FAIL alone stops nothing", fail: "a1",
			batches: [][]Job{{job("a1", 2), job("a2", 1)}, {job("b1", 1)}},
			want:    []string{"a2", "a1", "b1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Left open when UntilFail: RunStream must not wait for its close.
			batches := make(chan []Job, len(tc.batches))
			for _, b := range tc.batches {
				batches <- b
			}
			if !tc.untilFail {
				close(batches)
			}
			run := func(_ context.Context, cfg Config) *results.Result {
				if cfg.OutDir == tc.fail {
					return &results.Result{Verdict: results.Fail}
				}
				return &results.Result{Verdict: results.Pass}
			}
			var got []string
			RunStream(context.Background(), batches, StreamOptions{Parallel: 1, UntilFail: tc.untilFail, Run: run,
				Each: func(j Job, _ *results.Result) { got = append(got, j.Name) }})
			if !slices.Equal(got, tc.want) {
				t.Errorf("ran %q, want %q", got, tc.want)
			}
		})
	}
}
