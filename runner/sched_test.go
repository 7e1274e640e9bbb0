package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/scenarios"
)

const schedScenario = `name: s
timeline:
  - sched: {task: napi/eth0-, cpus: "1", policy: fifo, priority: 50}
  - sched: {task: napi/, nice: -5, min: 0}
  - sched: {task: ksoftirqd/, policy: idle, min: 2}
`

// answeringAgent answers every request with answer's message (ID filled in)
// and passes the requests on.
func answeringAgent(t *testing.T, answer wire.Message) (*control, <-chan *wire.Message) {
	t.Helper()
	host, guest := net.Pipe()
	ctl := newControl(host)
	t.Cleanup(func() { ctl.Close() })
	calls := make(chan *wire.Message, 16)
	go func() {
		c := wire.NewConn(guest)
		for {
			m, err := c.Recv()
			if err != nil {
				return
			}
			calls <- m
			a := answer
			a.ID = m.ID
			if c.Send(&a) != nil {
				return
			}
		}
	}()
	return ctl, calls
}

// TestSchedAction checks a sched step's wire call and what the tasks it
// changed mean: too few is a FAIL-class error, a refusal keeps its errno.
func TestSchedAction(t *testing.T) {
	s, err := scenarios.Parse("s.yaml", []byte(schedScenario), nil)
	if err != nil {
		t.Fatal(err)
	}
	one := []wire.Task{{PID: 120, Comm: "napi/eth0-9"}}
	nice := -5
	for _, tc := range []struct {
		name   string
		step   int
		answer wire.Message
		args   wire.Sched
		err    string // "" = none
		kernel bool   // the error implicates the kernel
	}{
		{"enough tasks", 0, wire.Message{Data: wire.Encode(one)},
			wire.Sched{Task: "napi/eth0-", CPUs: "1", Policy: "fifo", Priority: 50}, "", false},
		{"no task where one is wanted", 0, wire.Message{Data: wire.Encode([]wire.Task{})},
			wire.Sched{Task: "napi/eth0-", CPUs: "1", Policy: "fifo", Priority: 50}, "0 tasks named napi/eth0-* changed, want at least 1", true},
		{"none allowed", 1, wire.Message{Data: wire.Encode([]wire.Task{})}, wire.Sched{Task: "napi/", Nice: &nice}, "", false},
		{"one of two", 2, wire.Message{Data: wire.Encode([]wire.Task{{PID: 12, Comm: "ksoftirqd/0"}})},
			wire.Sched{Task: "ksoftirqd/", Policy: "idle"}, "1 tasks named ksoftirqd/* changed, want at least 2: ksoftirqd/0 (pid 12)", true},
		{"the kernel refused", 0, wire.Message{Error: "napi/eth0-9 (pid 120): sched_setaffinity cpus 1: invalid argument", Kind: wire.KindErrno, Errno: int(syscall.EINVAL)},
			wire.Sched{Task: "napi/eth0-", CPUs: "1", Policy: "fifo", Priority: 50}, "invalid argument", true},
		{"the agent refused", 0, wire.Message{Error: "sched napi/eth0-: bad policy", Kind: wire.KindAgent},
			wire.Sched{Task: "napi/eth0-", CPUs: "1", Policy: "fifo", Priority: 50}, "bad policy", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl, calls := answeringAgent(t, tc.answer)
			tl := newTimeline(s, 1, ctl, nil, nil)
			err := tl.action(context.Background(), s.Timeline[tc.step], 0)
			m := <-calls
			var got wire.Sched
			if jerr := json.Unmarshal(m.Args, &got); jerr != nil || m.Op != wire.OpSched || !sameSched(got, tc.args) {
				t.Errorf("call %s %s (%v), want %+v", m.Op, m.Args, jerr, tc.args)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.err == "":
				return
			case err == nil || !strings.Contains(err.Error(), tc.err):
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			r := &run{res: &results.Result{}}
			if _, kernel := r.classify(&stepError{step: "sched", line: 3, err: err}); kernel != tc.kernel {
				t.Errorf("classified as the kernel's fault: %v, want %v", kernel, tc.kernel)
			}
			var few *tooFewError
			if tc.kernel && errors.As(err, &few) == (tc.answer.Error != "") {
				t.Errorf("error %T: a too-few error only when the agent answered tasks", err)
			}
		})
	}
}

func sameSched(a, b wire.Sched) bool {
	if (a.Nice == nil) != (b.Nice == nil) || a.Nice != nil && *a.Nice != *b.Nice {
		return false
	}
	a.Nice, b.Nice = nil, nil
	return a == b
}

// TestSchedLoadArgs checks that a load's receiver settings reach the sink's
// start, and only the sink's.
func TestSchedLoadArgs(t *testing.T) {
	const y = `name: l
topology:
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
loads:
  f: {kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9}, sink_cpu: 0, sink_policy: rr, sink_priority: 20, rcvbuf: 8388608}
timeline:
  - start: f
`
	s, err := scenarios.Parse("l.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl, calls := fakeAgent(t)
	tl := newTimeline(s, 1, ctl, nil, nil)
	if err := tl.action(context.Background(), s.Timeline[0], 0); err != nil {
		t.Fatal(err)
	}
	var sink, send wire.Load
	json.Unmarshal((<-calls).Args, &sink)
	json.Unmarshal((<-calls).Args, &send)
	if sink.Kind != wire.LoadUDPSink || sink.Policy != "rr" || sink.Priority != 20 || sink.RcvBuf != 8388608 || sink.CPU != 0 || sink.Nice != nil {
		t.Errorf("sink %+v, want udp-sink on cpu 0 at rr 20 with an 8 MiB buffer", sink)
	}
	if send.Policy != "" || send.Priority != 0 || send.RcvBuf != 0 {
		t.Errorf("sender %+v got the receiver's settings", send)
	}
}
