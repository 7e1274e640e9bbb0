package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"napilab/internal/wire"
)

// errAgentGone means the control channel closed: the guest died or hung up.
var errAgentGone = errors.New("guest agent connection closed")

// control is the host end of the agent's virtio-serial channel.
type control struct {
	conn    *wire.Conn
	raw     net.Conn
	mu      sync.Mutex
	next    int64
	pending map[int64]chan *wire.Message
	ready   chan *wire.Message
	closed  chan struct{}
	err     error
}

func newControl(c net.Conn) *control {
	ctl := &control{conn: wire.NewConn(c), raw: c, pending: map[int64]chan *wire.Message{},
		ready: make(chan *wire.Message, 1), closed: make(chan struct{})}
	go ctl.read()
	return ctl
}

func (c *control) read() {
	for {
		m, err := c.conn.Recv()
		if err != nil {
			c.mu.Lock()
			c.err = errAgentGone
			for _, ch := range c.pending {
				close(ch)
			}
			c.pending = map[int64]chan *wire.Message{}
			c.mu.Unlock()
			close(c.closed)
			return
		}
		if m.Event == wire.EventReady {
			select {
			case c.ready <- m:
			default:
			}
			continue
		}
		c.mu.Lock()
		ch, ok := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ok {
			ch <- m
		}
	}
}

// helloBackoff and helloBackoffMax space waitReady's hellos.
const (
	helloBackoff    = 50 * time.Millisecond
	helloBackoffMax = time.Second
)

// waitReady waits for the agent: its ready event, or an answer to a hello
// (the event is lost when it is sent before the host end is connected).
func (c *control) waitReady(ctx context.Context) (*wire.Hello, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answered := make(chan *wire.Hello, 1)
	go func() {
		wait := helloBackoff
		for ctx.Err() == nil {
			var h wire.Hello
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
			err := c.call(cctx, wire.OpHello, nil, &h)
			ccancel()
			if err == nil {
				answered <- &h
				return
			}
			if errors.Is(err, errAgentGone) {
				return
			}
			// A hello that fails at once (a send error, a garbage
			// answer) must not turn into a tight loop.
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, helloBackoffMax)
		}
	}()
	select {
	case m := <-c.ready:
		var h wire.Hello
		if err := json.Unmarshal(m.Data, &h); err != nil {
			return nil, fmt.Errorf("bad ready event: %w", err)
		}
		return &h, nil
	case h := <-answered:
		return h, nil
	case <-c.closed:
		return nil, errAgentGone
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// callCeiling bounds a guest call whose context has no deadline. Every
// caller in runner gives its own (the step's, setupLimit, a cleanup's);
// this is the floor under a caller that forgot.
const callCeiling = 30 * time.Minute

// sendTimeout bounds one write to the agent: a guest that stops reading
// its port does not block the host.
const sendTimeout = 10 * time.Second

// guestError is an error the agent answered with. Kind says who failed
// (wire.KindErrno: the kernel refused the operation; wire.KindAgent: the
// agent or its image; wire.KindTimeout: the agent's own deadline).
type guestError struct {
	Op    string
	Kind  string
	Errno syscall.Errno // for wire.KindErrno
	Msg   string        // the agent's message
}

func (e *guestError) Error() string { return e.Msg }

// Unwrap makes errors.Is(err, syscall.EINVAL) hold for a refused operation.
func (e *guestError) Unwrap() error {
	if e.Errno != 0 {
		return e.Errno
	}
	return nil
}

// kernelRefused says whether the kernel refused the operation with an errno.
func (e *guestError) kernelRefused() bool { return e.Kind == wire.KindErrno && e.Errno != 0 }

// call sends a request and waits for its answer until ctx ends; out may be
// nil. The agent's errors come back as *guestError.
//
// A call whose ctx was canceled because a parallel sibling failed
// (errSiblingFailed) keeps waiting for its answer until ctx's deadline: an
// operation stuck in the guest is a hang, not a cancellation.
func (c *control) call(ctx context.Context, op string, args, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		// Every guest call is bounded: one its caller left open gets the
		// ceiling (a lab bug, not a way to wait forever).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callCeiling)
		defer cancel()
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.err
	}
	c.next++
	id := c.next
	ch := make(chan *wire.Message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	drop := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	sctx, scancel := context.WithTimeout(ctx, sendTimeout)
	err := c.conn.SendContext(sctx, &wire.Message{ID: id, Op: op, Args: wire.Encode(args)})
	scancel()
	if err != nil {
		drop()
		return fmt.Errorf("failed to send %s to the agent: %w", op, err)
	}
	var m *wire.Message
	var ok bool
	select {
	case m, ok = <-ch:
	case <-ctx.Done():
		if !stuckAfterSibling(ctx) {
			drop()
			return ctx.Err()
		}
		dl, _ := ctx.Deadline()
		select {
		case m, ok = <-ch:
		case <-time.After(time.Until(dl)):
			drop()
			return context.DeadlineExceeded
		}
	}
	if !ok {
		return errAgentGone
	}
	if out != nil && len(m.Data) > 0 {
		// An error may come with data: the output of a program the
		// agent killed.
		if err := json.Unmarshal(m.Data, out); err != nil && m.Error == "" {
			return fmt.Errorf("bad answer to %s from the agent: %w", op, err)
		}
	}
	if m.Error != "" {
		return &guestError{Op: op, Kind: m.Kind, Errno: syscall.Errno(m.Errno), Msg: m.Error}
	}
	return nil
}

// errSiblingFailed is the cause of a parallel branch's cancellation when
// another branch failed.
var errSiblingFailed = errors.New("a parallel sibling failed")

// stuckAfterSibling says whether ctx ended because a sibling failed while
// it still has a deadline to wait for.
func stuckAfterSibling(ctx context.Context) bool {
	_, ok := ctx.Deadline()
	return ok && errors.Is(context.Cause(ctx), errSiblingFailed)
}

func (c *control) Close() error { return c.raw.Close() }

// dropped says how many control lines were discarded: too long or not JSON.
func (c *control) dropped() wire.Drops { return c.conn.Dropped() }
