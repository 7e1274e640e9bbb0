package runner

import (
	"napilab/internal/wire"
	"napilab/runner/vm"
	"napilab/scenarios"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestWindowMin(t *testing.T) {
	for _, tc := range []struct {
		name         string
		b            []uint64
		width        int
		min          uint64
		at, nWindows int
	}{
		{"steady", []uint64{5, 5, 5, 5}, 2, 10, 0, 3},
		{"leading zeros skipped", []uint64{0, 0, 3, 4, 5}, 2, 7, 2, 2},
		{"stall in the middle", []uint64{9, 9, 0, 0, 9}, 2, 0, 2, 4},
		{"too short", []uint64{0, 1}, 5, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			min, at, n := scenarios.WindowMin(tc.b, tc.width)
			if min != tc.min || at != tc.at || n != tc.nWindows {
				t.Errorf("windowMin = %d at %d over %d windows, want %d at %d over %d", min, at, n, tc.min, tc.at, tc.nWindows)
			}
		})
	}
}

func TestQEMUArgs(t *testing.T) {
	q := &vm.QEMU{Accel: "tcg", CPUs: 4, MemoryMB: 256, Kernel: "/k", Initrd: "/i", Append: "console=ttyS0 panic=-1",
		Control: os.Stdin, Monitor: os.Stdin, NICs: []vm.QEMUNIC{{MAC: "52:54:00:12:34:56", Queues: make([]*os.File, 2)},
			{MAC: "52:54:00:12:34:57", Queues: make([]*os.File, 3)}}}
	cmd := q.Cmdline()
	for _, want := range []string{
		"-smp 4,sockets=4,cores=1,threads=1",
		"-netdev tap,id=net0,fds=3:4,vhost=off",
		"virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56,mq=on,vectors=6",
		"-netdev tap,id=net1,fds=5:6:7,vhost=off",
		"-append 'console=ttyS0 panic=-1'",
		"virtserialport,bus=vser0.0,chardev=ctl,name=napilab.ctl",
		"-chardev socket,id=ctl,fd=8,server=off", // after the five queues
		"-chardev socket,id=mon,fd=9,server=off -mon chardev=mon,mode=readline",
		"-no-reboot",
	} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command line lacks %q:\n%s", want, cmd)
		}
	}
}

func TestShardSplitsEveryJobOnce(t *testing.T) {
	var jobs []Job
	for i := 0; i < 50; i++ {
		jobs = append(jobs, Job{Name: "scenario-" + strconv.Itoa(i) + "@stock-6.1#1"})
	}
	seen := map[string]int{}
	for k := 1; k <= 3; k++ {
		shard := Shard(jobs, k, 3)
		if len(shard) == 0 || len(shard) == len(jobs) {
			t.Errorf("shard %d/3 has %d of %d jobs", k, len(shard), len(jobs))
		}
		for _, j := range shard {
			seen[j.Name]++
		}
		again := Shard(jobs, k, 3)
		if len(again) != len(shard) {
			t.Errorf("shard %d/3 is not deterministic", k)
		}
	}
	for _, j := range jobs {
		if seen[j.Name] != 1 {
			t.Errorf("%s in %d shards", j.Name, seen[j.Name])
		}
	}
}

func TestMaxParallel(t *testing.T) {
	if n := MaxParallel(1, 256); n != 1 {
		t.Errorf("MaxParallel(1) = %d", n)
	}
	if n := MaxParallel(1000, 256); n < 1 || n > runtime.NumCPU() {
		t.Errorf("MaxParallel(1000) = %d with %d cpus", n, runtime.NumCPU())
	}
}

func TestBisect(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for culprit := 1; culprit <= n; culprit++ {
			probes := 0
			got, err := Bisect(n, func(k int) (Outcome, error) {
				probes++
				if k <= 0 || k >= n {
					t.Fatalf("probed an end: %d of %d", k, n)
				}
				if k >= culprit {
					return Bad, nil
				}
				return Good, nil
			}, nil)
			if err != nil || got.First != culprit || got.Last != culprit {
				t.Errorf("n=%d culprit=%d: got %d, %v", n, culprit, got, err)
			}
			if probes > 4 {
				t.Errorf("n=%d: %d probes", n, probes)
			}
		}
	}
	if _, err := Bisect(0, nil, nil); err == nil {
		t.Error("empty series accepted")
	}
}

func TestStuckFunctionPrefersTheAgent(t *testing.T) {
	tasks := []wire.TaskStack{
		{PID: 27, Comm: "kworker/1:1", State: "D", Stack: "[<0>] addrconf_dad_work+0x36/0x39c\n[<0>] process_one_work+0x153/0x1e9\n"},
		{PID: 41, Comm: "napi/eth0-0", State: "S", Stack: "[<0>] napi_threaded_poll+0xc0/0xf2\n"},
		{PID: 39, Comm: "init", State: "D", Stack: "[<0>] napi_disable+0x30/0x62\n[<0>] virtnet_close+0x51/0x5a\n"},
	}
	if got := stuckFunction(tasks); got != "napi_disable" {
		t.Errorf("stuckFunction = %q, want napi_disable (the agent's thread)", got)
	}
	if got := stuckFunction(tasks[:2]); got != "addrconf_dad_work" {
		t.Errorf("without an agent thread: %q, want the other blocked task", got)
	}
	running := append(tasks[:2:2], wire.TaskStack{PID: 39, Comm: "init", State: "R", Stack: "[<0>] napi_disable+0x30/0x62\n"})
	if got := stuckFunction(running); got != "napi_disable" {
		t.Errorf("agent thread caught runnable: %q, want napi_disable before the blocked kworker", got)
	}
	idle := append(tasks[:2:2], wire.TaskStack{PID: 40, Comm: "init", State: "R"},
		wire.TaskStack{PID: 54, Comm: "init", State: "R", Stack: "[<0>] futex_do_wait+0x1e/0x60\n[<0>] __futex_wait+0x64/0xa7\n[<0>] do_futex+0xc7/0x157\n"})
	if got := stuckFunction(idle); got != "addrconf_dad_work" {
		t.Errorf("agent thread runnable in user space: %q, want the blocked kworker", got)
	}
	if !agentBlocked(tasks) || agentBlocked(tasks[:2]) {
		t.Error("agentBlocked: want true with the blocked init thread only")
	}
}
