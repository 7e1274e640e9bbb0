package scenarios

import (
	"strings"
	"testing"
)

// schedBase has two CPUs and a udp and an rr load; the step under test is
// line 10.
const schedBase = `name: t
topology:
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
loads:
  u: {kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}}
  r: {kind: rr, from: {netns: a}, to: {address: 10.1.0.1, port: 7}}
timeline:
  - sleep: 1s
`

func TestSchedStep(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		min        int
		explain    string
	}{
		{"pin and fifo", "  - sched: {task: napi/eth0-, cpus: \"1\", policy: fifo, priority: 50}\n", 1,
			"tune tasks named napi/eth0-*: cpus 1, policy fifo, priority 50 (at least 1 must match)"},
		{"nice alone, none needed", "  - sched: {task: ksoftirqd/, nice: -5, min: 0}\n", 0,
			"tune tasks named ksoftirqd/*: nice -5 (none need match)"},
		{"batch with nice", "  - sched: {task: napi/, policy: batch, nice: 19, min: 4}\n", 4,
			"tune tasks named napi/*: policy batch, nice 19 (at least 4 must match)"},
		{"idle", "  - sched: {task: napi/vrx-, policy: idle}\n", 1, "tune tasks named napi/vrx-*: policy idle"},
		{"a cpu list", "  - sched: {task: napi/, cpus: 0-1, policy: rr, priority: 99}\n", 1, "cpus 0-1, policy rr, priority 99"},
		{"repeated", "  - {sched: {task: napi/, cpus: \"0\"}, every: 1s, count: 2}\n", 1, "cpus 0 (at least 1 must match) every 1s, 2 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("x.yaml", []byte(schedBase+tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			st := s.Timeline[1]
			if st.Action() != "sched" || st.Sched.MinTasks() != tc.min {
				t.Errorf("action %q min %d, want sched and %d", st.Action(), st.Sched.MinTasks(), tc.min)
			}
			var b strings.Builder
			explainStep(&b, st, 0, "")
			if !strings.Contains(b.String(), tc.explain) {
				t.Errorf("explain %q, want it to contain %q", b.String(), tc.explain)
			}
		})
	}
}

func TestSchedStepErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"no task", "  - sched: {cpus: \"1\"}\n", "x.yaml:10:5: sched needs task: a comm prefix such as napi/eth0- or ksoftirqd/"},
		{"a task longer than a comm", "  - sched: {task: napi/averylongname-, nice: 1}\n",
			`x.yaml:10:5: sched task "napi/averylongname-" never matches: a comm has at most 15 characters (TASK_COMM_LEN), use "napi/averylongn"`},
		{"nothing to set", "  - sched: {task: napi/}\n", "x.yaml:10:5: sched needs at least one of cpus, policy, priority, nice"},
		{"a cpu the machine lacks", "  - sched: {task: napi/, cpus: 1-2}\n", `x.yaml:10:5: sched cpus "1-2" names cpu 2: the machine has 2 cpus`},
		{"not a cpu list", "  - sched: {task: napi/, cpus: all}\n", `x.yaml:10:5: sched cpus "all": want a CPU list like 1 or 0-1`},
		{"a backwards range", "  - sched: {task: napi/, cpus: 1-0}\n", `x.yaml:10:5: sched cpus "1-0": want a CPU list like 1 or 0-1`},
		{"affinity of ksoftirqd", "  - sched: {task: ksoftirqd/, cpus: \"1\"}\n",
			`x.yaml:10:5: sched task "ksoftirqd/" with cpus: matches ksoftirqd threads, which the kernel keeps on their CPU (it refuses their affinity with EINVAL)`},
		{"affinity of a prefix of kworker", "  - sched: {task: kw, cpus: \"1\"}\n", `sched task "kw" with cpus: matches kworker threads`},
		{"unknown policy", "  - sched: {task: napi/, policy: deadline}\n",
			`x.yaml:10:5: sched policy "deadline": want other, batch, idle, fifo or rr`},
		{"fifo without priority", "  - sched: {task: napi/, policy: fifo}\n", "x.yaml:10:5: sched policy fifo needs priority: 1-99, got 0"},
		{"priority past 99", "  - sched: {task: napi/, policy: rr, priority: 100}\n", "x.yaml:10:5: sched policy rr needs priority: 1-99, got 100"},
		{"priority without policy", "  - sched: {task: napi/, priority: 10}\n", "x.yaml:10:5: sched priority 10 needs policy: fifo or rr"},
		{"priority for other", "  - sched: {task: napi/, policy: other, priority: 10}\n", "x.yaml:10:5: sched priority 10 is for fifo and rr, not other"},
		{"nice out of range", "  - sched: {task: napi/, nice: -21}\n", "x.yaml:10:5: sched nice -21: want -20 to 19"},
		{"nice for fifo", "  - sched: {task: napi/, policy: fifo, priority: 1, nice: 0}\n",
			"x.yaml:10:5: sched nice is for policies other and batch, not fifo"},
		{"nice for idle", "  - sched: {task: napi/, policy: idle, nice: 5}\n", "x.yaml:10:5: sched nice is for policies other and batch, not idle"},
		{"negative min", "  - sched: {task: napi/, nice: 0, min: -1}\n", "x.yaml:10:5: sched min -1: want 0 or more tasks (0 allows none)"},
		{"misspelt key", "  - sched: {task: napi/, prio: 5}\n", `unknown field "prio" in sched`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(schedBase+tc.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLoadSched(t *testing.T) {
	for _, tc := range []struct{ name, load, want string }{
		{"rr receiver at fifo", "{kind: rr, from: {netns: a}, to: {address: 10.1.0.1, port: 7}, sink_policy: fifo, sink_priority: 20}", ""},
		{"udp receiver, nice and a socket buffer", "{kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, sink_nice: -20, rcvbuf: 8388608}", ""},
		{"idle receiver", "{kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, sink_policy: idle}", ""},
		{"fifo without priority", "{kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, sink_policy: fifo}",
			"x.yaml:6:6: load l: sink_policy fifo needs sink_priority: 1-99, got 0"},
		{"unknown policy", "{kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, sink_policy: realtime}",
			`x.yaml:6:6: load l: sink_policy "realtime": want other, batch, idle, fifo or rr`},
		{"nice for rr", "{kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, sink_policy: rr, sink_priority: 1, sink_nice: 1}",
			"x.yaml:6:6: load l: sink_nice is for policies other and batch, not rr"},
		{"priority without policy", "{kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, sink_priority: 5}",
			"x.yaml:6:6: load l: sink_priority 5 needs sink_policy: fifo or rr"},
		{"socket buffer of a tcp load", "{kind: tcp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, rcvbuf: 65536}",
			"x.yaml:6:6: load l: rcvbuf is for udp loads (the receiver's socket), not tcp"},
		{"tiny socket buffer", "{kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, rcvbuf: 100}",
			"x.yaml:6:6: load l: rcvbuf 100: want 4096 to 67108864 bytes (the kernel doubles it; a quarter of the guest's 256 MiB)"},
		{"socket buffer past the guest's memory", "{kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, rcvbuf: 134217728}",
			"x.yaml:6:6: load l: rcvbuf 134217728: want 4096 to 67108864 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := "name: t\ntopology:\n  netns: [a]\n  veths: [{name: vrx, address: 10.1.0.1/24, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]\n" +
				"loads:\n  l: " + tc.load + "\ntimeline:\n  - start: l\n"
			s, err := Parse("x.yaml", []byte(y), nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			case tc.want == "":
				var b strings.Builder
				s.Explain(&b)
				if !strings.Contains(b.String(), ", sink ") {
					t.Errorf("explain does not describe the receiver's scheduling or buffer:\n%s", b.String())
				}
			}
		})
	}
}
