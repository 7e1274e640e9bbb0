package runner

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"napilab/internal/wire"
)

// stuckStop is a scenario whose second step fails while a load runs; the
// agent it runs against never answers stop.
const stuckStop = fakeTopology + `loads:
  flood:
    kind: udp
    from: {netns: a}
    to: {address: 10.1.0.1, port: 9000}
timeline:
  - start: [flood]
  - {name: refused, write: {path: /sys/class/net/vrx/threaded, value: "1"}}
`

var stuckStopAgent = map[string]behaviour{
	wire.OpWrite: {err: "write: invalid argument", kind: wire.KindErrno, errno: syscall.EINVAL},
	wire.OpStop:  {silent: true},
}

// TestCleanupHasDeadline: after a failed step, stopping a load the agent
// never stops ends at the cleanup deadline with the step's error.
func TestCleanupHasDeadline(t *testing.T) {
	defer func(d time.Duration) { cleanupTimeout = d }(cleanupTimeout)
	cleanupTimeout = 300 * time.Millisecond
	tl, a := fakeTimeline(t, stuckStop, stuckStopAgent)
	err := runWithin(t, tl, context.Background(), 5*time.Second)
	var se *stepError
	if !errors.As(err, &se) || se.step != "refused" {
		t.Errorf("error %v, want step refused", err)
	}
	if a.count(wire.OpStop) != 1 {
		t.Errorf("%d stops, want 1", a.count(wire.OpStop))
	}
}

// TestAbortSkipsCleanup: once the run is interrupted, the abort context
// (a second Ctrl-C) ends the cleanup at once, long before its deadline.
func TestAbortSkipsCleanup(t *testing.T) {
	defer func(d time.Duration) { cleanupTimeout = d }(cleanupTimeout)
	cleanupTimeout = time.Minute
	tl, a := fakeTimeline(t, stuckStop, stuckStopAgent)
	abort, abortNow := context.WithCancel(context.Background())
	go func() {
		for a.count(wire.OpStop) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		abortNow()
	}()
	begin := time.Now()
	err := runWithin(t, tl, WithAbort(context.Background(), abort), 5*time.Second)
	if err == nil || time.Since(begin) > 2*time.Second {
		t.Errorf("error %v after %v, want the step's error at once", err, time.Since(begin))
	}
}
