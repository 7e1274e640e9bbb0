// Package wire is the control protocol between the runner (host) and the
// guest agent: one JSON object per line over a virtio-serial port.
//
// The host sends a Message with ID and Op; the agent answers with a Message
// carrying the same ID and either Data or Error. Unsolicited agent messages
// (ID 0) carry an Event.
package wire

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
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
	OpArm      = "arm"      // InjectArm -> nothing
	OpQdisc    = "qdisc"    // Qdisc -> nothing
	OpKmemleak = "kmemleak" // nothing -> KmemleakReport (debug kernels)
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

// Conn reads and writes Messages on a stream; Send is safe for concurrent use.
type Conn struct {
	r  *bufio.Reader
	mu sync.Mutex
	w  io.Writer
}

// NewConn wraps a stream.
func NewConn(rw io.ReadWriter) *Conn {
	return &Conn{r: bufio.NewReaderSize(rw, 1<<20), w: rw}
}

// Send writes one message as a line.
func (c *Conn) Send(m *Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err = c.w.Write(append(b, '\n'))
	return err
}

// Recv reads the next message; lines that are not JSON objects are skipped
// (a virtio-serial port may carry garbage from before the agent started).
func (c *Conn) Recv() (*Message, error) {
	for {
		line, err := c.r.ReadBytes('\n')
		if len(line) > 1 && line[0] == '{' {
			var m Message
			if jerr := json.Unmarshal(line, &m); jerr == nil {
				return &m, nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
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
