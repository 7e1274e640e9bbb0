package agent

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// fakeProc writes a /proc tree: tasks maps "pid/tid" to a comm; a comm of
// "" leaves the task without one (it exited while the tree was read).
func fakeProc(t *testing.T, tasks map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for id, comm := range tasks {
		pid, tid, _ := strings.Cut(id, "/")
		dir := filepath.Join(root, pid, "task", tid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if comm != "" {
			os.WriteFile(filepath.Join(dir, "comm"), []byte(comm+"\n"), 0o644)
		}
	}
	// What else /proc holds: no task there.
	os.MkdirAll(filepath.Join(root, "net"), 0o755)
	os.WriteFile(filepath.Join(root, "net", "comm"), []byte("napi/eth0-1\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "self", "task", "1"), 0o755)
	os.WriteFile(filepath.Join(root, "self", "task", "1", "comm"), []byte("napi/eth0-1\n"), 0o644)
	return root
}

func TestMatchTasks(t *testing.T) {
	proc := fakeProc(t, map[string]string{
		"1/1":     "init",
		"1/7":     "napi/eth0-9", // a thread whose leader's comm differs
		"20/20":   "napi/eth0-10",
		"30/30":   "napi/vrx-11",
		"40/40":   "ksoftirqd/0",
		"41/41":   "ksoftirqd/1",
		"50/50":   "",                // exited
		"60/60":   "napi/averylongn", // napi/averylongname-12, cut to 15 characters
		"70/71":   "napi/eth0-3",     // the leader exited, its thread lives on
		"80/80":   "backlog_napi/0",
		"90/foo":  "napi/eth0-4", // not a task id
		"100/100": "kthreadd",
	})
	for _, tc := range []struct {
		name, prefix string
		want         []int
	}{
		{"one device's kthreads, threads included", "napi/eth0-", []int{7, 20, 71}},
		{"a longer prefix", "napi/eth0-1", []int{20}},
		{"every napi kthread", "napi/", []int{7, 20, 30, 60, 71}},
		{"ksoftirqd", "ksoftirqd/", []int{40, 41}},
		{"a truncated comm matches its cut prefix", "napi/averylongn", []int{60}},
		{"a prefix longer than any comm", "napi/averylongname-", nil},
		{"none", "nope", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks, err := matchTasks(proc, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			var pids []int
			for _, tk := range tasks {
				pids = append(pids, tk.PID)
			}
			if !slices.Equal(pids, tc.want) {
				t.Errorf("pids %v (%v), want %v", pids, tasks, tc.want)
			}
		})
	}
}

func TestSchedAttr(t *testing.T) {
	nice := func(n int) *int { return &n }
	clamp := unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: -5, Flags: unix.SCHED_FLAG_RESET_ON_FORK | 0x20, Util_min: 10, Util_max: 1024}
	fifo := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 50}
	for _, tc := range []struct {
		name string
		cur  unix.SchedAttr
		x    wire.Sched
		want unix.SchedAttr
	}{
		{"fifo keeps the nice value", clamp, wire.Sched{Policy: "fifo", Priority: 50},
			unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 50, Nice: -5,
				Flags: unix.SCHED_FLAG_RESET_ON_FORK, Util_min: 10, Util_max: 1024}},
		{"nice alone keeps the policy", fifo, wire.Sched{Nice: nice(3)},
			unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 50, Nice: 3}},
		{"back to other drops the priority", fifo, wire.Sched{Policy: "other", Nice: nice(-20)},
			unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: -20}},
		{"batch", unix.SchedAttr{}, wire.Sched{Policy: "batch"}, unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_BATCH}},
		{"idle", unix.SchedAttr{}, wire.Sched{Policy: "idle"}, unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}},
		{"rr", unix.SchedAttr{}, wire.Sched{Policy: "rr", Priority: 99}, unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 99}},
		{"deadline parameters go with a new policy", unix.SchedAttr{Policy: 6, Runtime: 1, Deadline: 2, Period: 3}, wire.Sched{Policy: "other"},
			unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := schedAttr(tc.cur, tc.x); *got != tc.want {
				t.Errorf("attr %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestSchedTasksErrors(t *testing.T) {
	nice := func(n int) *int { return &n }
	proc := fakeProc(t, map[string]string{"1/1": "napi/eth0-1"})
	for _, tc := range []struct {
		name string
		x    wire.Sched
	}{
		{"no prefix", wire.Sched{CPUs: "0"}},
		{"nothing to set", wire.Sched{Task: "napi/"}},
		{"unknown policy", wire.Sched{Task: "napi/", Policy: "deadline"}},
		{"fifo without priority", wire.Sched{Task: "napi/", Policy: "fifo"}},
		{"priority for other", wire.Sched{Task: "napi/", Policy: "other", Priority: 5}},
		{"priority past 99", wire.Sched{Task: "napi/", Policy: "rr", Priority: 100}},
		{"nice out of range", wire.Sched{Task: "napi/", Nice: nice(20)}},
		{"bad cpu list", wire.Sched{Task: "napi/", CPUs: "0-"}},
		{"cpu past the set", wire.Sched{Task: "napi/", CPUs: "4096"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks, err := schedTasks(proc, tc.x)
			if err == nil {
				t.Fatalf("tasks %v, want an error", tasks)
			}
			// The agent's own refusal, not the kernel's.
			if kind, _ := errorKind(err); kind != wire.KindAgent {
				t.Errorf("%v: kind %s, want %s", err, kind, wire.KindAgent)
			}
		})
	}
}

// namedThread runs a locked thread named comm until the test ends and
// returns its tid. The thread exits with its goroutine, tuned or not.
func namedThread(t *testing.T, comm string) int {
	t.Helper()
	tid, done := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with us
		id := unix.Gettid()
		if err := os.WriteFile(fmt.Sprintf("/proc/self/task/%d/comm", id), []byte(comm), 0); err != nil {
			t.Error(err)
		}
		tid <- id
		<-done
	}()
	t.Cleanup(func() { close(done) })
	return <-tid
}

// firstCPU is the lowest CPU this process may run on.
func firstCPU(t *testing.T) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			return c
		}
	}
	t.Fatal("no cpu in this process's affinity")
	return 0
}

// realRuns counts TestSchedTasksReal's runs in this process (-count).
var realRuns int

// TestSchedTasksReal tunes threads of this process through the real /proc
// and syscalls: two threads with the prefix, one without.
func TestSchedTasksReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: nice below the current value and other tasks' settings")
	}
	realRuns++ // a fresh prefix per run: Go parks a locked main thread, named, for good
	prefix := fmt.Sprintf("n%d.%d-", os.Getpid(), realRuns)
	a, b := namedThread(t, prefix+"a"), namedThread(t, prefix+"b")
	other := namedThread(t, "nlx"+strconv.Itoa(os.Getpid()))
	cpu := firstCPU(t)
	nice := 7
	x := wire.Sched{Task: prefix, CPUs: strconv.Itoa(cpu), Policy: "batch", Nice: &nice}
	changed, err := schedTasks("/proc", x)
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.Task{{PID: a, Comm: prefix + "a"}, {PID: b, Comm: prefix + "b"}}
	slices.SortFunc(want, func(x, y wire.Task) int { return x.PID - y.PID })
	if !slices.Equal(changed, want) {
		t.Fatalf("changed %v, want %v", changed, want)
	}
	for _, tid := range []int{a, b} {
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			t.Fatal(err)
		}
		var set unix.CPUSet
		unix.SchedGetaffinity(tid, &set)
		if attr.Policy != unix.SCHED_BATCH || attr.Nice != 7 || set.Count() != 1 || !set.IsSet(cpu) {
			t.Errorf("thread %d: policy %d nice %d cpus %d (cpu %d set: %v), want batch, 7, only cpu %d",
				tid, attr.Policy, attr.Nice, set.Count(), cpu, set.IsSet(cpu), cpu)
		}
	}
	if attr, _ := unix.SchedGetAttr(other, 0); attr == nil || attr.Policy == unix.SCHED_BATCH {
		t.Errorf("thread %d without the prefix was changed: %+v", other, attr)
	}
	// A CPU that is not online: the kernel refuses with EINVAL, and the
	// answer says so.
	_, err = schedTasks("/proc", wire.Sched{Task: prefix, CPUs: "1023"})
	if kind, errno := errorKind(err); kind != wire.KindErrno || errno != int(syscall.EINVAL) {
		t.Errorf("affinity to cpu 1023: %v (kind %s errno %d), want the kernel's EINVAL", err, kind, errno)
	}
	// None match: no error, nothing changed (the host checks min).
	if changed, err := schedTasks("/proc", wire.Sched{Task: "nlnone" + strconv.Itoa(os.Getpid()), Nice: &nice}); err != nil || len(changed) != 0 {
		t.Errorf("no match: %v, %v; want nothing and no error", changed, err)
	}
}

func TestSetRcvBuf(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SO_RCVBUFFORCE needs CAP_NET_ADMIN")
	}
	for _, tc := range []struct {
		name  string
		bytes int
		want  func(got, rmemMax int) bool
	}{
		{"forced past rmem_max, doubled", 8 << 20, func(got, _ int) bool { return got == 16<<20 }},
		{"small", 65536, func(got, _ int) bool { return got == 131072 }},
		{"the default, capped by rmem_max", 0, func(got, rmemMax int) bool { return got == 2*min(rmemMax, 4<<20) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := setRcvBuf(c, tc.bytes); err != nil {
				t.Fatal(err)
			}
			rc, _ := c.SyscallConn()
			var got int
			rc.Control(func(fd uintptr) { got, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
			b, _ := os.ReadFile("/proc/sys/net/core/rmem_max")
			rmemMax, _ := strconv.Atoi(string(b[:len(b)-1]))
			if err != nil || !tc.want(got, rmemMax) {
				t.Errorf("SO_RCVBUF %d (%v) after asking %d (rmem_max %d)", got, err, tc.bytes, rmemMax)
			}
		})
	}
}

// batchThreads returns this process's threads at SCHED_BATCH, but those in
// skip.
func batchThreads(skip []int) []int {
	var out []int
	tids, _ := filepath.Glob("/proc/self/task/[0-9]*")
	for _, dir := range tids {
		tid, _ := strconv.Atoi(filepath.Base(dir))
		if attr, err := unix.SchedGetAttr(tid, 0); err == nil && attr.Policy == unix.SCHED_BATCH && !slices.Contains(skip, tid) {
			out = append(out, tid)
		}
	}
	return out
}

// TestLoadTuning starts udp sinks with scheduling settings: the receiving
// thread gets them, and a setting the kernel refuses fails the start with
// its errno.
func TestLoadTuning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to lower nice values")
	}
	before := batchThreads(nil) // Go parks a locked main thread for good: earlier tests may leave it tuned
	nice := 5
	a := newAgent()
	spec := wire.Load{Name: "sink", Kind: wire.LoadUDPSink, Addr: "127.0.0.1", Port: freePort(t, "udp4"), CPU: firstCPU(t),
		Policy: "batch", Nice: &nice, RcvBuf: 1 << 20}
	if err := a.startLoad(spec); err != nil {
		t.Fatal(err)
	}
	tuned := batchThreads(before)
	var nices []int32
	for _, tid := range tuned {
		if attr, err := unix.SchedGetAttr(tid, 0); err == nil {
			nices = append(nices, attr.Nice)
		}
	}
	if _, err := a.stopLoad("sink"); err != nil {
		t.Fatal(err)
	}
	if len(tuned) != 1 || !slices.Equal(nices, []int32{5}) {
		t.Fatalf("threads %v at batch with nice %v; want the sink's one at nice 5", tuned, nices)
	}
	// The tuned thread ends with the load instead of serving the agent on
	// (unless it is the main thread, which Go parks instead).
	skip := append(before, os.Getpid())
	deadline := time.Now().Add(5 * time.Second)
	for len(batchThreads(skip)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if left := batchThreads(skip); len(left) > 0 {
		t.Errorf("batch threads %v left after the load stopped", left)
	}

	bad := wire.Load{Name: "bad", Kind: wire.LoadUDPSink, Addr: "127.0.0.1", Port: freePort(t, "udp4"), CPU: 1023}
	err := a.startLoad(bad)
	if kind, errno := errorKind(err); kind != wire.KindErrno || errno != int(syscall.EINVAL) {
		t.Errorf("a sink pinned to cpu 1023: %v (kind %s errno %d), want the kernel's EINVAL", err, kind, errno)
	}
	if len(a.loads) != 0 {
		t.Errorf("loads after a failed start: %v", a.loads)
	}
	// Its socket is closed: the port binds again.
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: bad.Port})
	if err != nil {
		t.Errorf("the failed sink's port is still bound: %v", err)
	} else {
		c.Close()
	}
}
