package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"napilab/images/wire"
)

// agent holds the guest-side state: namespaces and running loads.
type agent struct {
	ns    *namespaces
	mu    sync.Mutex
	loads map[string]*load
	xdps  xdpState
	polls pollCounter
	probe injector
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

func (a *agent) hello() wire.Hello {
	v, _ := os.ReadFile("/proc/version")
	return wire.Hello{
		Kernel:  release(),
		Version: strings.TrimSpace(string(v)),
		CPUs:    runtime.NumCPU(),
		Uptime:  uptime(),

		Kmemleak: hasKmemleak(),
	}
}

func (a *agent) dispatch(m *wire.Message) (any, error) {
	switch m.Op {
	case wire.OpHello:
		return a.hello(), nil
	case wire.OpInject:
		in, err := decode[wire.Inject](m)
		if err != nil {
			return nil, err
		}
		return nil, a.probe.setup(in)
	case wire.OpArm:
		arm, err := decode[wire.InjectArm](m)
		if err != nil {
			return nil, err
		}
		return nil, a.probe.arm(arm)
	case wire.OpSetup:
		t, err := decode[wire.Topology](m)
		if err != nil {
			return nil, err
		}
		return nil, a.setup(t)
	case wire.OpWrite:
		f, err := decode[wire.File](m)
		if err != nil {
			return nil, err
		}
		return nil, a.ns.writeFile(f)
	case wire.OpRead:
		f, err := decode[wire.File](m)
		if err != nil {
			return nil, err
		}
		return a.ns.readFile(f)
	case wire.OpLink:
		l, err := decode[wire.Link](m)
		if err != nil {
			return nil, err
		}
		return nil, a.ns.linkUpDown(l.Netns, l.Dev, l.Up)
	case wire.OpFeature:
		f, err := decode[wire.Feature](m)
		if err != nil {
			return nil, err
		}
		return nil, a.ns.feature(f.Netns, f.Dev, f.Feature, f.On)
	case wire.OpChannels:
		c, err := decode[wire.Channels](m)
		if err != nil {
			return nil, err
		}
		return nil, a.ns.channels(c.Netns, c.Dev, c.Combined)
	case wire.OpStart:
		l, err := decode[wire.Load](m)
		if err != nil {
			return nil, err
		}
		return nil, a.startLoad(l)
	case wire.OpStop:
		n, err := decode[wire.LoadName](m)
		if err != nil {
			return nil, err
		}
		return a.stopLoad(n.Name)
	case wire.OpSample:
		s, err := decode[wire.SampleArgs](m)
		if err != nil {
			return nil, err
		}
		return a.sample(s.Sources), nil
	case wire.OpSysrq:
		s, err := decode[wire.Sysrq](m)
		if err != nil {
			return nil, err
		}
		return nil, os.WriteFile("/proc/sysrq-trigger", []byte(s.Key), 0)
	case wire.OpStacks:
		return stacks(), nil
	case wire.OpDevices:
		return a.devices(), nil
	case wire.OpXDP:
		x, err := decode[wire.XDP](m)
		if err != nil {
			return nil, err
		}
		return nil, a.xdp(x)
	case wire.OpQdisc:
		q, err := decode[wire.Qdisc](m)
		if err != nil {
			return nil, err
		}
		return nil, a.qdisc(q)
	case wire.OpNAPI:
		n, err := decode[wire.NAPI](m)
		if err != nil {
			return nil, err
		}
		return a.napi(n)
	case wire.OpExec:
		x, err := decode[wire.Exec](m)
		if err != nil {
			return nil, err
		}
		return a.exec(x)
	case wire.OpIRQ:
		x, err := decode[wire.IRQAffinity](m)
		if err != nil {
			return nil, err
		}
		return pinIRQs(x)
	case wire.OpSched:
		x, err := decode[wire.Sched](m)
		if err != nil {
			return nil, err
		}
		return schedTasks("/proc", x)
	case wire.OpKmemleak:
		return kmemleak()
	case wire.OpPoweroff:
		a.stopAll()
		return nil, nil
	}
	return nil, fmt.Errorf("unknown op %q", m.Op)
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
	dirs, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
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
