package runner

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"napilab/images/wire"
)

// TestCallTypedErrors checks that the agent's errors reach the verdict
// typed: an errno the kernel returned, the agent's own fault, a bad answer.
func TestCallTypedErrors(t *testing.T) {
	ctl, _ := startScripted(t, map[string]behaviour{
		wire.OpWrite: {err: "write \"1\" to /sys/x: invalid argument", kind: wire.KindErrno, errno: syscall.EINVAL},
		wire.OpExec:  {err: `no such program "ethtool"`, kind: wire.KindAgent},
		wire.OpStop:  {data: "not stats"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ge *guestError
	err := ctl.call(ctx, wire.OpWrite, wire.File{Path: "/sys/x", Value: "1"}, nil)
	if !errors.As(err, &ge) || !ge.kernelRefused() || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("write: %#v, want a refused operation with EINVAL", err)
	}
	err = ctl.call(ctx, wire.OpExec, wire.Exec{Argv: []string{"ethtool"}}, nil)
	if !errors.As(err, &ge) || ge.kernelRefused() || ge.Kind != wire.KindAgent {
		t.Errorf("exec: %#v, want an agent fault", err)
	}
	var st wire.LoadStats
	err = ctl.call(ctx, wire.OpStop, wire.LoadName{Name: "a"}, &st)
	if err == nil || errors.As(err, &ge) {
		t.Errorf("stop with a bad answer: %v, want a decode error", err)
	}
}

// failingWrites is a connection whose writes fail.
type failingWrites struct{ net.Conn }

func (failingWrites) Write([]byte) (int, error) { return 0, errors.New("broken port") }

// TestCallSendFailure: a failed send is reported and leaves no pending call.
func TestCallSendFailure(t *testing.T) {
	host, guest := net.Pipe()
	defer guest.Close()
	ctl := newControl(failingWrites{host})
	defer ctl.Close()
	err := ctl.call(context.Background(), wire.OpHello, nil, nil)
	if err == nil || errors.Is(err, errAgentGone) {
		t.Fatalf("call: %v, want a send error", err)
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if len(ctl.pending) != 0 {
		t.Errorf("%d pending calls left after a failed send", len(ctl.pending))
	}
}
