package runner

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"napilab/images/wire"
	"napilab/scenarios"
)

// action performs iteration i of a step's action.
func (t *timeline) action(ctx context.Context, st *scenarios.Step, i int) error {
	switch {
	case st.Write != nil:
		return t.ctl.call(ctx, wire.OpWrite, wire.File{Path: st.Write.Path, Netns: st.Write.Netns, Value: st.Value(i)}, nil)
	case st.Link != nil:
		return t.ctl.call(ctx, wire.OpLink, wire.Link{Dev: st.Link.Dev, Netns: st.Link.Netns, Up: st.Value(i) == "up"}, nil)
	case st.GRO != nil:
		return t.ctl.call(ctx, wire.OpFeature, wire.Feature{Dev: st.GRO.Dev, Netns: st.GRO.Netns, Feature: "rx-gro", On: st.Value(i) == "on"}, nil)
	case st.Channels != nil:
		n := st.Channels.Values[i%len(st.Channels.Values)]
		return t.ctl.call(ctx, wire.OpChannels, wire.Channels{Dev: st.Channels.Dev, Netns: st.Channels.Netns, Combined: n}, nil)
	case len(st.Start) > 0:
		for _, n := range st.Start {
			if err := t.startLoad(ctx, n); err != nil {
				return err
			}
		}
	case len(st.Stop) > 0:
		for _, n := range st.Stop {
			if err := t.stopLoad(ctx, n); err != nil {
				return err
			}
		}
	case st.Sleep > 0:
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(st.Sleep.D()):
		}
	case st.Sysctl != nil:
		p := "/proc/sys/" + strings.ReplaceAll(st.Sysctl.Name, ".", "/")
		return t.ctl.call(ctx, wire.OpWrite, wire.File{Path: p, Netns: st.Sysctl.Netns, Value: st.Value(i)}, nil)
	case st.XDP != nil:
		return t.ctl.call(ctx, wire.OpXDP, wire.XDP{Dev: st.XDP.Dev, Netns: st.XDP.Netns, Attach: st.Value(i) == "attach", Mode: st.XDP.Mode}, nil)
	case st.Inject != nil:
		return t.ctl.call(ctx, wire.OpArm, wire.InjectArm{Name: st.Inject.Name, On: st.Value(i) == "on"}, nil)
	case st.Qdisc != nil:
		q := st.Qdisc
		w := wire.Qdisc{Dev: q.Dev, Netns: q.Netns, Op: q.Op, Limit: uint32(q.Limit)}
		if len(q.Kind) > 0 {
			w.Kind = q.Kind[i%len(q.Kind)]
		}
		return t.ctl.call(ctx, wire.OpQdisc, w, nil)
	case st.NAPI != nil:
		return t.ctl.call(ctx, wire.OpNAPI, napiArgs(st, i), nil)
	case st.RPS != nil:
		r := st.RPS
		for _, q := range queuesOr0(r.Queues) {
			dir := path.Join("/sys/class/net", r.Dev, "queues", "rx-"+strconv.Itoa(q))
			if len(r.CPUs) > 0 {
				if err := t.ctl.call(ctx, wire.OpWrite, wire.File{Path: dir + "/rps_cpus", Netns: r.Netns, Value: r.CPUs[i%len(r.CPUs)]}, nil); err != nil {
					return err
				}
			}
			if r.FlowCnt != nil {
				if err := t.ctl.call(ctx, wire.OpWrite, wire.File{Path: dir + "/rps_flow_cnt", Netns: r.Netns, Value: strconv.Itoa(*r.FlowCnt)}, nil); err != nil {
					return err
				}
			}
		}
	case st.XPS != nil:
		for _, q := range queuesOr0(st.XPS.Queues) {
			p := path.Join("/sys/class/net", st.XPS.Dev, "queues", "tx-"+strconv.Itoa(q), "xps_cpus")
			if err := t.ctl.call(ctx, wire.OpWrite, wire.File{Path: p, Netns: st.XPS.Netns, Value: st.XPS.CPUs[i%len(st.XPS.CPUs)]}, nil); err != nil {
				return err
			}
		}
	case st.IRQ != nil:
		return t.ctl.call(ctx, wire.OpIRQ, wire.IRQAffinity{Match: st.IRQ.Match, CPUs: st.IRQ.CPUs}, nil)
	case st.Sched != nil:
		return t.sched(ctx, st.Sched)
	case st.Exec != nil:
		return t.exec(ctx, st, i+1)
	case st.Wait != nil:
		return t.wait(ctx, st.Wait)
	case len(st.Kselftest) > 0:
		for _, name := range st.Kselftest {
			if err := t.kselftest(ctx, st, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func queuesOr0(q []int) []int {
	if len(q) == 0 {
		return []int{0}
	}
	return q
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitError is a wait whose condition did not hold within its timeout: an
// expectation about the kernel that failed (FAIL).
type waitError struct {
	timeout time.Duration
	last    string // what was seen last
}

func (e *waitError) Error() string {
	return fmt.Sprintf("condition not met within %v (last seen: %s)", e.timeout, e.last)
}

// wait polls until the condition holds; running out of Timeout is an error.
func (t *timeline) wait(ctx context.Context, w *scenarios.Wait) error {
	timeout := w.Timeout.D()
	if timeout == 0 {
		timeout = t.s.Defaults.Deadline.D()
	}
	until := time.Now().Add(timeout)
	var last string
	for {
		ok, seen, err := t.holds(ctx, w)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		last = seen
		if time.Now().After(until) {
			return &waitError{timeout: timeout, last: last}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// holds checks a wait condition once.
func (t *timeline) holds(ctx context.Context, w *scenarios.Wait) (bool, string, error) {
	if w.Path != "" {
		var v string
		if err := t.ctl.call(ctx, wire.OpRead, wire.File{Path: w.Path, Netns: w.Netns}, &v); err != nil {
			return false, "", err
		}
		v = strings.TrimSpace(v)
		return v == w.Equals, fmt.Sprintf("%s = %q", w.Path, v), nil
	}
	var s wire.Sample
	src := wire.PrefixThreads + w.Threads
	if err := t.ctl.call(ctx, wire.OpSample, wire.SampleArgs{Sources: []string{src}}, &s); err != nil {
		return false, "", err
	}
	n := countLines(s.Values[src])
	if w.Absent {
		return n == 0, fmt.Sprintf("%d %s* threads", n, w.Threads), nil
	}
	return n >= max(w.Min, 1), fmt.Sprintf("%d %s* threads", n, w.Threads), nil
}

func countLines(s string) int {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}

// napiArgs is what iteration i of a napi step asks the agent to set.
func napiArgs(st *scenarios.Step, i int) wire.NAPI {
	n := st.NAPI
	w := wire.NAPI{Dev: n.Dev, Netns: n.Netns, Queue: n.Queue, Threaded: st.Value(i)}
	if n.DeferHardIRQs != nil {
		v := uint32(*n.DeferHardIRQs)
		w.DeferHardIRQs = &v
	}
	ns := func(d *scenarios.Duration) *uint64 {
		if d == nil {
			return nil
		}
		v := uint64(d.D().Nanoseconds())
		return &v
	}
	w.GROFlushTimeout, w.IRQSuspendTimeout = ns(n.GROFlushTimeout), ns(n.IRQSuspendTimeout)
	return w
}
