package runner

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"napilab/images/agent"
	"napilab/internal/wire"
	"napilab/runner/vm"
)

// inProcess is a Guest whose agent is the real one (package agent) serving
// in this process, in a private network namespace, behind a scriptedAgent
// that stands for the virtio-serial port: it answers the scripted ops
// itself and passes the rest on. The console is what the script prints.
//
// The agent runs on the host's kernel: ops that reach past a network
// namespace (SysRq, probes, IRQ affinity, scheduling, kmemleak) are
// answered by the script (inProcessDefaults), and runs set NoPolls (the
// who-polled sampler attaches BPF to the host's tracepoints).
type inProcess struct {
	ctl    *control
	con    *console
	script *scriptedAgent
	print  *io.PipeWriter // the console's input
	log    *os.File       // console.log
	conns  []io.Closer    // both ends of both channels

	// use is the machine's CPU use (vm.CPUUse); nil = not measurable.
	use func() (vm.CPUUse, error)

	dieOnce sync.Once
	served  chan struct{} // the agent's Serve returned
	done    chan struct{} // the guest ended: Serve returned, the console ended
}

// inProcessDefaults keeps the in-process agent off the host: SysRq prints
// its header on the console, the rest is refused as the agent's fault.
var inProcessDefaults = map[string]behaviour{
	wire.OpSysrq:    {console: "sysrq: Show Blocked State\n"},
	wire.OpInject:   {err: "no probes in an in-process guest", kind: wire.KindAgent},
	wire.OpArm:      {err: "no probes in an in-process guest", kind: wire.KindAgent},
	wire.OpIRQ:      {err: "no IRQ affinity in an in-process guest", kind: wire.KindAgent},
	wire.OpSched:    {err: "no scheduling in an in-process guest", kind: wire.KindAgent},
	wire.OpKmemleak: {err: "no kmemleak in an in-process guest", kind: wire.KindAgent},
}

// startInProcess starts an in-process guest whose script adds ops to
// inProcessDefaults; its console is written to dir/console.log. It skips
// the test when this process may not make a network namespace.
func startInProcess(t testing.TB, dir string, ops map[string]behaviour) *inProcess {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the in-process guest needs root for its network namespaces")
	}
	script := map[string]behaviour{}
	for _, m := range []map[string]behaviour{inProcessDefaults, ops} {
		for op, b := range m {
			script[op] = b
		}
	}
	log, err := os.Create(filepath.Join(dir, "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	g := &inProcess{con: newConsole(log), log: log, served: make(chan struct{}), done: make(chan struct{})}
	host, relayHost := net.Pipe()
	relayAgent, port := net.Pipe()
	g.conns = []io.Closer{relayHost, relayAgent, port}
	g.ctl = newControl(host)

	pr, pw := io.Pipe()
	g.print = pw
	consoleDone := make(chan struct{})
	go func() {
		g.con.copy(pr)
		close(consoleDone)
	}()
	runDir := t.TempDir() // made before the agent mounts in it: removed after it unmounted
	go func() {
		err := agent.Serve(port, agent.Options{Netns: true, RunDir: runDir, Poweroff: g.die})
		g.printf("napilab-agent: control port: %v\n", err)
		close(g.served)
		g.die()
	}()
	toHost, toAgent := wire.NewConn(relayHost), wire.NewConn(relayAgent)
	go func() { // the agent's answers and events
		for {
			m, err := toAgent.Recv()
			if err != nil || toHost.Send(m) != nil {
				return
			}
		}
	}()
	g.script = &scriptedAgent{ops: script, print: func(s string) { g.printf("%s", s) },
		next: func(m *wire.Message) { toAgent.Send(m) }}
	go g.script.serve(toHost, g.die)
	go func() {
		<-g.served
		<-consoleDone
		close(g.done)
	}()
	t.Cleanup(g.close)
	return g
}

// printf writes to the guest's console.
func (g *inProcess) printf(format string, args ...any) {
	io.WriteString(g.print, fmt.Sprintf(format, args...))
}

// die is the guest powering off or dying: the port and the console close.
func (g *inProcess) die() {
	g.dieOnce.Do(func() {
		for _, c := range g.conns {
			c.Close()
		}
		go func() {
			<-g.served
			g.print.Close()
		}()
	})
}

func (g *inProcess) channel() *control           { return g.ctl }
func (g *inProcess) output() *console            { return g.con }
func (g *inProcess) ended() <-chan struct{}      { return g.done }
func (g *inProcess) exitStatus() (error, string) { return nil, "" }

func (g *inProcess) sysrq(context.Context, ...string) error { return errNoSysrq }

func (g *inProcess) cpuUse() (vm.CPUUse, error) {
	if g.use == nil {
		return vm.CPUUse{}, vm.ErrNoCPUUse
	}
	return g.use()
}

func (g *inProcess) stop(grace time.Duration) {
	select {
	case <-g.done:
		return
	case <-time.After(grace):
	}
	g.die()
	<-g.done
}

func (g *inProcess) close() {
	g.stop(0)
	g.ctl.Close()
	g.log.Close()
}

// inProcessGuest is Config.newGuest for an in-process guest with ops.
func inProcessGuest(t testing.TB, ops map[string]behaviour, started *(*inProcess)) func(r *run, accel string) (Guest, error) {
	return func(r *run, accel string) (Guest, error) {
		g := startInProcess(t, r.cfg.OutDir, ops)
		if started != nil {
			*started = g
		}
		return g, nil
	}
}
