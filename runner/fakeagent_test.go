package runner

import (
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"napilab/internal/wire"
)

// behaviour is how a scriptedAgent answers one op.
type behaviour struct {
	data    any           // the answer's data
	err     string        // the answer's error text
	kind    string        // the error's kind (wire.Kind*)
	errno   syscall.Errno // the error's errno, for wire.KindErrno
	delay   time.Duration // wait before answering
	silent  bool          // never answer
	die     bool          // hang up instead of answering
	console string        // print this on the guest's console first (in-process guest)
	pass    bool          // then let the agent behind answer (in-process guest)
}

// scriptedAgent is a fake guest agent with a behaviour per op; ops
// without one get an empty answer, or go to the agent behind it. It answers
// requests concurrently, as the agent does.
type scriptedAgent struct {
	ops  map[string]behaviour
	mu   sync.Mutex
	seen []string // the ops received, in order

	// next answers what the script leaves (the in-process guest's agent);
	// nil = an empty answer.
	next func(m *wire.Message)
	// print writes to the guest's console; nil = no console.
	print func(text string)
}

// startScripted returns the host end of a scriptedAgent over net.Pipe
// answering with ops.
func startScripted(t *testing.T, ops map[string]behaviour) (*control, *scriptedAgent) {
	t.Helper()
	a := &scriptedAgent{ops: ops}
	host, guest := net.Pipe()
	go a.serve(wire.NewConn(guest), func() { guest.Close() })
	ctl := newControl(host)
	t.Cleanup(func() { ctl.Close(); guest.Close() })
	return ctl, a
}

// serve answers the requests on conn until it fails; hangup is a guest
// that dies.
func (a *scriptedAgent) serve(conn *wire.Conn, hangup func()) {
	for {
		m, err := conn.Recv()
		if err != nil {
			return
		}
		a.mu.Lock()
		a.seen = append(a.seen, m.Op)
		a.mu.Unlock()
		b, scripted := a.ops[m.Op]
		go func() {
			if b.console != "" && a.print != nil {
				a.print(b.console)
			}
			time.Sleep(b.delay)
			switch {
			case b.silent:
				return
			case b.die:
				hangup()
				return
			case a.next != nil && (!scripted || b.pass):
				a.next(m)
				return
			}
			conn.Send(&wire.Message{ID: m.ID, Data: wire.Encode(b.data), Error: b.err, Kind: b.kind, Errno: int(b.errno)})
		}()
	}
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
