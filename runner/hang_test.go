package runner

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/scenarios"
)

// fakeTimeline parses src and returns its timeline against a scriptedAgent.
func fakeTimeline(t *testing.T, src string, ops map[string]behaviour) (*timeline, *scriptedAgent) {
	t.Helper()
	s, err := scenarios.Parse("f.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, a := startScripted(t, ops)
	return newTimeline(s, 1, ctl, nil, func(string, ...any) {}), a
}

// runWithin runs the timeline and fails the test when it takes over limit.
func runWithin(t *testing.T, tl *timeline, ctx context.Context, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- tl.run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("the timeline did not end within %v", limit)
		return nil
	}
}

const fakeTopology = `name: f
topology:
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
`

// TestSleepIsNotAHang: a sleep longer than the step deadline is no hang.
func TestSleepIsNotAHang(t *testing.T) {
	tl, _ := fakeTimeline(t, fakeTopology+`defaults: {deadline: 100ms}
timeline:
  - sleep: 300ms
`, nil)
	if err := runWithin(t, tl, context.Background(), 5*time.Second); err != nil {
		t.Fatalf("a sleep past the deadline: %v, want no error", err)
	}
}

// TestParallelHangAfterSiblingFails: a branch stuck in the guest past its
// deadline is a hang, even when a sibling failed first.
func TestParallelHangAfterSiblingFails(t *testing.T) {
	tl, _ := fakeTimeline(t, fakeTopology+`timeline:
  - parallel:
      - {name: refused, write: {path: /sys/class/net/vrx/threaded, value: "1"}}
      - {name: stuck, link: {dev: vrx, state: down}, deadline: 300ms}
`, map[string]behaviour{
		wire.OpWrite: {err: "write: invalid argument", kind: wire.KindErrno, errno: syscall.EINVAL, delay: 50 * time.Millisecond},
		wire.OpLink:  {silent: true},
	})
	err := runWithin(t, tl, context.Background(), 5*time.Second)
	var h *hangError
	if !errors.As(err, &h) || h.step != "stuck" {
		t.Fatalf("error %v, want a hang of step stuck", err)
	}
}

// TestParallelSiblingFailsFirst: a branch that answers in time after a
// sibling failed is a cancellation; the sibling's error is the cause.
func TestParallelSiblingFailsFirst(t *testing.T) {
	tl, _ := fakeTimeline(t, fakeTopology+`timeline:
  - parallel:
      - {name: refused, write: {path: /sys/class/net/vrx/threaded, value: "1"}}
      - {name: slow, link: {dev: vrx, state: down}, deadline: 2s}
      - {name: nap, sleep: 10s}
`, map[string]behaviour{
		wire.OpWrite: {err: "write: invalid argument", kind: wire.KindErrno, errno: syscall.EINVAL, delay: 50 * time.Millisecond},
		wire.OpLink:  {delay: 200 * time.Millisecond},
	})
	err := runWithin(t, tl, context.Background(), 5*time.Second)
	var se *stepError
	if !errors.As(err, &se) || se.step != "refused" || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("error %v, want step refused failed with EINVAL", err)
	}
}
