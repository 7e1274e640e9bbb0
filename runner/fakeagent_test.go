package runner

import (
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"napilab/images/wire"
)

// behaviour is how a scriptedAgent answers one op.
type behaviour struct {
	data   any           // the answer's data
	err    string        // the answer's error text
	kind   string        // the error's kind (wire.Kind*)
	errno  syscall.Errno // the error's errno, for wire.KindErrno
	delay  time.Duration // wait before answering
	silent bool          // never answer
	die    bool          // hang up instead of answering
}

// scriptedAgent is a fake guest agent over net.Pipe with a behaviour per op; ops
// without one get an empty answer. It answers requests concurrently, as
// the agent does.
type scriptedAgent struct {
	ops  map[string]behaviour
	mu   sync.Mutex
	seen []string // the ops received, in order
}

// startScripted returns the host end of a scriptedAgent answering with ops.
func startScripted(t *testing.T, ops map[string]behaviour) (*control, *scriptedAgent) {
	t.Helper()
	a := &scriptedAgent{ops: ops}
	host, guest := net.Pipe()
	conn := wire.NewConn(guest)
	go func() {
		for {
			m, err := conn.Recv()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.seen = append(a.seen, m.Op)
			a.mu.Unlock()
			b := a.ops[m.Op]
			go func() {
				time.Sleep(b.delay)
				switch {
				case b.silent:
					return
				case b.die:
					guest.Close()
					return
				}
				conn.Send(&wire.Message{ID: m.ID, Data: wire.Encode(b.data), Error: b.err, Kind: b.kind, Errno: int(b.errno)})
			}()
		}
	}()
	ctl := newControl(host)
	t.Cleanup(func() { ctl.Close(); guest.Close() })
	return ctl, a
}

// count says how many times op was received.
func (a *scriptedAgent) count(op string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, s := range a.seen {
		if s == op {
			n++
		}
	}
	return n
}
