package agent

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// agent holds the guest-side state: namespaces and running loads.
type agent struct {
	ns    *namespaces
	mu    sync.Mutex
	loads map[string]*load
	xdps  xdpState
	polls pollCounter
	probe injector
	cover injector // counts the calls of the functions a kernel's series changes
}

func newAgent() *agent {
	return &agent{ns: newNamespaces(), loads: map[string]*load{}}
}

// release is the running kernel's release, like 7.3.4.
func release() string {
	var u unix.Utsname
	unix.Uname(&u)
	return unix.ByteSliceToString(u.Release[:])
}

// raiseMemlock lifts RLIMIT_MEMLOCK as far as it may, for kernels before
// memcg accounting (5.11), which charged BPF maps and programs to it;
// every lab kernel is newer, so a limit it cannot lift (no
// CAP_SYS_RESOURCE, as in some test hosts) is no error. cilium/ebpf's
// rlimit package does the same, but its package init probes the kernel
// with a BPF map (~10 ms of the agent's start under TCG).
func raiseMemlock() error {
	inf := &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, inf); err != unix.EPERM {
		return err
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &cur); err != nil {
		return err
	}
	cur.Cur = cur.Max
	return unix.Setrlimit(unix.RLIMIT_MEMLOCK, &cur)
}

// mainAt is the uptime Init began at as the guest's /init, execAt when the
// kernel ran it (execTime, read beside the port search); 0 otherwise.
var mainAt, execAt float64

func (a *agent) hello() wire.Hello {
	v, _ := os.ReadFile("/proc/version")
	return wire.Hello{
		Kernel:  release(),
		Version: strings.TrimSpace(string(v)),
		CPUs:    runtime.NumCPU(),
		Uptime:  uptime(),
		Exec:    execAt,
		Main:    mainAt,

		Kmemleak: hasKmemleak(),
	}
}

// handler answers one request: the data to send back, or an error.
type handler func(a *agent, m *wire.Message) (any, error)

// handlers maps each op (wire.Op*) to what the agent does for it.
var handlers = map[string]handler{
	wire.OpHello:    func(a *agent, _ *wire.Message) (any, error) { return a.hello(), nil },
	wire.OpInject:   does(func(a *agent, in wire.Inject) error { return a.probe.setup(in) }),
	wire.OpArm:      does(func(a *agent, arm wire.InjectArm) error { return a.probe.arm(arm) }),
	wire.OpCover:    answers(func(a *agent, c wire.Cover) ([]string, error) { return a.cover.count(c) }),
	wire.OpSetup:    does((*agent).setup),
	wire.OpWrite:    does(func(a *agent, f wire.File) error { return a.ns.writeFile(f) }),
	wire.OpRead:     answers(func(a *agent, f wire.File) (string, error) { return a.ns.readFile(f) }),
	wire.OpLink:     does(func(a *agent, l wire.Link) error { return a.ns.linkUpDown(l.Netns, l.Dev, l.Up) }),
	wire.OpFeature:  does(func(a *agent, f wire.Feature) error { return a.ns.feature(f.Netns, f.Dev, f.Feature, f.On) }),
	wire.OpChannels: does(func(a *agent, c wire.Channels) error { return a.ns.channels(c.Netns, c.Dev, c.Combined) }),
	wire.OpStart:    does((*agent).startLoad),
	wire.OpStop:     answers(func(a *agent, n wire.LoadName) (*wire.LoadStats, error) { return a.stopLoad(n.Name) }),
	wire.OpSample:   answers(func(a *agent, s wire.SampleArgs) (*wire.Sample, error) { return a.sample(s.Sources), nil }),
	wire.OpSysrq:    does(func(_ *agent, s wire.Sysrq) error { return os.WriteFile("/proc/sysrq-trigger", []byte(s.Key), 0) }),
	wire.OpStacks:   func(*agent, *wire.Message) (any, error) { return stacks(), nil },
	wire.OpDevices:  func(a *agent, _ *wire.Message) (any, error) { return a.devices(), nil },
	wire.OpXDP:      does((*agent).xdp),
	wire.OpQdisc:    does((*agent).qdisc),
	wire.OpNAPI:     answers((*agent).napi),
	wire.OpExec:     answers((*agent).exec),
	wire.OpIRQ:      answers(func(_ *agent, x wire.IRQAffinity) ([]int, error) { return pinIRQs(x) }),
	wire.OpSched:    answers(func(_ *agent, x wire.Sched) ([]wire.Task, error) { return schedTasks("/proc", x) }),
	wire.OpKmemleak: func(*agent, *wire.Message) (any, error) { return kmemleak() },
	wire.OpPoweroff: func(a *agent, _ *wire.Message) (any, error) { a.stopAll(); return nil, nil },
}

// does makes a handler of f, which takes the request's args and answers
// nothing.
func does[A any](f func(*agent, A) error) handler {
	return func(a *agent, m *wire.Message) (any, error) {
		args, err := decode[A](m)
		if err != nil {
			return nil, err
		}
		return nil, f(a, args)
	}
}

// answers makes a handler of f, which takes the request's args and
// answers with data.
func answers[A, R any](f func(*agent, A) (R, error)) handler {
	return func(a *agent, m *wire.Message) (any, error) {
		args, err := decode[A](m)
		if err != nil {
			return nil, err
		}
		return f(a, args)
	}
}

func (a *agent) dispatch(m *wire.Message) (any, error) {
	if h, ok := handlers[m.Op]; ok {
		return h(a, m)
	}
	return nil, fmt.Errorf("unknown op %q", m.Op)
}

// execTime is when the kernel ran this process as /init, seconds since
// boot on the printk clock, from its "Run /init as init process" record
// in /dev/kmsg; 0 if not found (its start time in /proc would be pid 1's
// fork, long before the exec). Non-blocking raw reads: at the end of the
// buffer read fails with EAGAIN, where the Go poller would wait.
func execTime() float64 {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	buf := make([]byte, 8192)
	for range 10000 {
		n, err := unix.Read(fd, buf)
		if err == unix.EPIPE {
			continue // overwritten before it was read
		}
		if err != nil || n <= 0 {
			return 0
		}
		if at, ok := initRecord(string(buf[:n])); ok {
			return at
		}
	}
	return 0
}

// initRecord reads a /dev/kmsg record ("6,812,145236,-;Run /init as init
// process") and returns its time in seconds when it is the one that ran init.
func initRecord(rec string) (float64, bool) {
	hdr, text, _ := strings.Cut(rec, ";")
	prog, ok := strings.CutPrefix(text, "Run ")
	if _, rest, _ := strings.Cut(prog, " "); !ok || !strings.HasPrefix(rest, "as init process") {
		return 0, false
	}
	f := strings.Split(hdr, ",")
	if len(f) < 3 {
		return 0, false
	}
	usec, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		return 0, false
	}
	return float64(usec) / 1e6, true
}

func uptime() float64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// stacks returns the tasks (threads included) in D state, and every napi/
// kthread, with their kernel stacks: the evidence for a hang.
func stacks() []wire.TaskStack {
	// Skip this thread: its own stack shows the read of /proc.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, mine := unix.Gettid(), fmt.Sprintf("/proc/%d/task/", os.Getpid())
	var out []wire.TaskStack
	for pid, dir := range eachTask("/proc") {
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open || close+3 > len(s) {
			continue
		}
		comm, state := s[open+1:close], s[close+2:close+3]
		// Blocked tasks, NAPI threads and the agent's runnable threads (a
		// step looping in usleep is runnable between its sleeps).
		agentRunning := state == "R" && pid != self && strings.HasPrefix(dir, mine)
		if state != "D" && !strings.HasPrefix(comm, "napi/") && !agentRunning {
			continue
		}
		wchan, _ := os.ReadFile(dir + "/wchan")
		stack, _ := os.ReadFile(dir + "/stack")
		out = append(out, wire.TaskStack{PID: pid, Comm: comm, State: state, Wchan: string(wchan), Stack: string(stack)})
	}
	return out
}
