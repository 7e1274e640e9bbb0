// Package wire is the control protocol between the runner (host) and the
// guest agent: one JSON object per line over a virtio-serial port.
//
// The host sends a Message with ID and Op; the agent answers with a Message
// carrying the same ID and either Data or Error. Unsolicited agent messages
// (ID 0) carry an Event.
package wire

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// PortName is the virtio-serial port name the agent looks for.
const PortName = "napilab.ctl"

// Ops understood by the agent.
const (
	OpHello    = "hello"    // -> Hello
	OpSetup    = "setup"    // Topology -> nothing
	OpWrite    = "write"    // File -> nothing
	OpRead     = "read"     // File -> string
	OpLink     = "link"     // Link -> nothing
	OpFeature  = "feature"  // Feature -> nothing
	OpChannels = "channels" // Channels -> nothing
	OpStart    = "start"    // Load -> nothing
	OpStop     = "stop"     // LoadName -> LoadStats
	OpSample   = "sample"   // SampleArgs -> Sample
	OpSysrq    = "sysrq"    // Sysrq -> nothing
	OpStacks   = "stacks"   // nothing -> []TaskStack
	OpPoweroff = "poweroff" // nothing -> nothing (the guest powers off after answering)
	OpXDP      = "xdp"      // XDP -> nothing
	OpExec     = "exec"     // Exec -> ExecResult
	OpIRQ      = "irq"      // IRQAffinity -> []int (the IRQ numbers changed)
	OpDevices  = "devices"  // nothing -> []Device
	OpInject   = "inject"   // Inject -> nothing (attaches the probes)
	OpCover    = "cover"    // Cover -> []string, the functions left out and why (counts calls)
	OpArm      = "arm"      // InjectArm -> nothing
	OpQdisc    = "qdisc"    // Qdisc -> nothing
	OpKmemleak = "kmemleak" // nothing -> KmemleakReport (debug kernels)
	OpNAPI     = "napi"     // NAPI -> []uint32 (the NAPI ids changed)
	OpSched    = "sched"    // Sched -> []Task (the tasks changed)
)

// Events sent by the agent on its own.
const (
	EventReady = "ready" // the agent is up; Data is Hello
	EventLog   = "log"   // Data is a string
)

// Message is one line of the protocol, in either direction.
type Message struct {
	ID    int64           `json:"id,omitempty"`
	Op    string          `json:"op,omitempty"`
	Event string          `json:"event,omitempty"`
	Args  json.RawMessage `json:"args,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
	Error string          `json:"error,omitempty"`
	// Kind says who failed when Error is set; "" is KindAgent.
	Kind string `json:"kind,omitempty"`
	// Errno is the errno the kernel returned, for KindErrno.
	Errno int `json:"errno,omitempty"`
}

// Kinds of error an answer carries: they decide the verdict on the host.
const (
	KindErrno   = "errno"   // the kernel refused the operation with Errno (a kernel fault)
	KindAgent   = "agent"   // the agent or its image failed: bad args, no such program (a lab fault)
	KindTimeout = "timeout" // the agent gave up waiting, e.g. killed a program at its timeout
)

// MaxLine bounds one line of the protocol. The longest legitimate message
// is an ExecResult: two streams of OutputMax bytes (kmemleak reports share
// the bound; stacks and samples are smaller), which JSON may escape to six
// bytes each (control bytes and invalid UTF-8 become \u00XX or \ufffd):
// 2 * 256 KiB * 6 = 3 MiB, plus the message around it.
const MaxLine = 4 << 20

// Drops counts what Recv read and discarded.
type Drops struct {
	Long    int64 // lines over MaxLine
	Garbage int64 // lines that are not a JSON object (non-empty)
}

// Conn reads and writes Messages on a stream; Send is safe for concurrent
// use, Recv is not.
type Conn struct {
	r       *bufio.Reader
	max     int
	long    atomic.Int64
	garbage atomic.Int64
	mu      sync.Mutex
	w       io.Writer
	werr    error // a write that stopped inside a line: the stream is broken
}

// NewConn wraps a stream.
func NewConn(rw io.ReadWriter) *Conn {
	return &Conn{r: bufio.NewReaderSize(rw, 64<<10), w: rw, max: MaxLine}
}

// Dropped returns how many lines Recv has discarded so far.
func (c *Conn) Dropped() Drops { return Drops{Long: c.long.Load(), Garbage: c.garbage.Load()} }

// Send writes one message as a line.
func (c *Conn) Send(m *Message) error { return c.SendContext(context.Background(), m) }

// writeDeadliner is a stream whose writes can time out (net.Conn, *os.File
// on a pipe or a socket).
type writeDeadliner interface {
	SetWriteDeadline(t time.Time) error
}

// SendContext writes one message as a line; when the stream takes a write
// deadline, the write gives up when ctx ends (the peer may stop reading).
// A write cut inside a line breaks the stream: later sends fail with the
// same error.
func (c *Conn) SendContext(ctx context.Context, m *Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := c.w.(writeDeadliner); ok && ctx.Done() != nil {
		dl, _ := ctx.Deadline()
		if d.SetWriteDeadline(dl) == nil {
			fired := make(chan struct{})
			stop := context.AfterFunc(ctx, func() {
				d.SetWriteDeadline(time.Unix(1, 0))
				close(fired)
			})
			defer func() {
				if !stop() {
					<-fired
				}
				d.SetWriteDeadline(time.Time{})
			}()
		}
	}
	b = append(b, '\n')
	n, err := c.w.Write(b)
	if err != nil && n > 0 {
		c.werr = fmt.Errorf("stream broken by a cut write: %w", err)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Only ctx sets the deadline; its timer may not have fired yet.
		err = fmt.Errorf("%w (%w)", cmp.Or(ctx.Err(), context.DeadlineExceeded), err)
	}
	return err
}

// Recv reads the next message. Lines that are not JSON objects are skipped
// and counted (a virtio-serial port may carry garbage from before the agent
// started); lines over MaxLine are read and discarded without being kept
// whole, and counted.
//
// An over-long line that starts like an answer ({"id":N, as Send writes it)
// comes back as a Message with that ID and an Error, so the request ends
// at once instead of at its deadline.
func (c *Conn) Recv() (*Message, error) {
	for {
		line, long, err := c.readLine()
		switch {
		case long:
			c.long.Add(1)
			if m := longAnswer(line); m != nil {
				return m, nil
			}
		case len(line) > 1 && line[0] == '{':
			var m Message
			if jerr := json.Unmarshal(line, &m); jerr == nil {
				return &m, nil
			}
			c.garbage.Add(1)
		case len(bytes.TrimSpace(line)) > 0:
			c.garbage.Add(1)
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine returns the next line, or long when it was over c.max: line
// then holds its first bytes only, the rest was dropped as it was read.
func (c *Conn) readLine() (line []byte, long bool, err error) {
	for {
		frag, err := c.r.ReadSlice('\n')
		if !long {
			line = append(line, frag...)
			if len(line) > c.max+1 {
				long, line = true, line[:longHead]
			}
		}
		if err != bufio.ErrBufferFull {
			return line, long, err
		}
	}
}

// longHead is how much of an over-long line is kept to find its ID.
const longHead = 32

// longAnswer turns the head of an over-long answer into an error for its
// request; nil when the head names no request: it must start {"id":N then
// "," or "}", N without a leading zero and at most 18 digits. (Read by
// hand: a package-level regexp costs the agent's start ~10-25 ms of
// translation under TCG.)
func longAnswer(head []byte) *Message {
	rest, ok := bytes.CutPrefix(head, []byte(`{"id":`))
	n := 0
	for n < len(rest) && n < 19 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if !ok || n == 0 || n > 18 || rest[0] == '0' || n == len(rest) || rest[n] != ',' && rest[n] != '}' {
		return nil
	}
	id, _ := strconv.ParseInt(string(rest[:n]), 10, 64)
	return &Message{ID: id, Error: fmt.Sprintf("the answer was dropped: a line over %d bytes", MaxLine)}
}

// Encode marshals v for Args or Data.
func Encode(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("wire: cannot encode %T: %v", v, err))
	}
	return b
}
