package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"napilab/internal/wire"
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

// TestControlFraming: the host reads the agent's answers whatever the
// stream does to their frames: split into bytes, two in one write out of
// order, behind garbage, stray answers and events. Each call gets its own.
func TestControlFraming(t *testing.T) {
	// answer echoes a read request's path as its data.
	answer := func(m *wire.Message) string {
		var f wire.File
		json.Unmarshal(m.Args, &f)
		b, _ := json.Marshal(wire.Message{ID: m.ID, Data: wire.Encode(f.Path)})
		return string(b) + "\n"
	}
	for _, tc := range []struct {
		name    string
		calls   int                                    // concurrent reads
		write   func(g net.Conn, reqs []*wire.Message) // the guest's answers
		garbage int64
	}{
		{"an answer byte by byte", 1, func(g net.Conn, reqs []*wire.Message) {
			for _, b := range []byte(answer(reqs[0])) {
				g.Write([]byte{b})
			}
		}, 0},
		{"two answers in one write, out of order", 2, func(g net.Conn, reqs []*wire.Message) {
			io.WriteString(g, answer(reqs[1])+answer(reqs[0]))
		}, 0},
		{"garbage, a stray answer and an event first", 1, func(g net.Conn, reqs []*wire.Message) {
			io.WriteString(g, "\x00not json\n"+`{"id":999,"data":"stray"}`+"\n"+`{"event":"log","data":"hi"}`+"\n"+answer(reqs[0]))
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl := guestPipe(t, func(g net.Conn) {
				conn := wire.NewConn(g)
				var reqs []*wire.Message
				for range tc.calls {
					m, err := conn.Recv()
					if err != nil {
						return
					}
					reqs = append(reqs, m)
				}
				tc.write(g, reqs)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs := make(chan error, tc.calls)
			for i := range tc.calls {
				go func() {
					path := fmt.Sprintf("/call/%d", i)
					var got string
					err := ctl.call(ctx, wire.OpRead, wire.File{Path: path}, &got)
					if err == nil && got != path {
						err = fmt.Errorf("call %s got the answer %q", path, got)
					}
					errs <- err
				}()
			}
			for range tc.calls {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			if d := ctl.dropped(); d.Garbage != tc.garbage || d.Long != 0 {
				t.Errorf("dropped %+v, want %d garbage", d, tc.garbage)
			}
		})
	}
}

// TestControlHangUp: a guest that hangs up inside a frame fails the call
// in flight and every later one with errAgentGone, and leaves nothing pending.
func TestControlHangUp(t *testing.T) {
	ctl := guestPipe(t, func(g net.Conn) {
		if _, err := wire.NewConn(g).Recv(); err == nil {
			io.WriteString(g, `{"id":1,"da`)
		}
		g.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ctl.call(ctx, wire.OpStacks, nil, nil); !errors.Is(err, errAgentGone) {
		t.Errorf("the call in flight: %v, want errAgentGone", err)
	}
	if err := ctl.call(ctx, wire.OpStacks, nil, nil); !errors.Is(err, errAgentGone) {
		t.Errorf("a later call: %v, want errAgentGone", err)
	}
	if _, err := ctl.waitReady(ctx); !errors.Is(err, errAgentGone) {
		t.Errorf("waitReady: %v, want errAgentGone", err)
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if len(ctl.pending) != 0 {
		t.Errorf("%d pending calls left", len(ctl.pending))
	}
}
