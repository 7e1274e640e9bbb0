package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/metrics"
	"napilab/results/splat"
	"napilab/scenarios"
)

// finish turns the run's error, the console and the timeline's records into
// the verdict: FAIL only on evidence against the kernel (kernelFault), ERROR
// for everything else that went wrong.
func (r *run) finish(err error) {
	res := r.res
	var ie *infraError
	kernelFault := false
	if errors.As(err, &ie) {
		res.Verdict = results.Error
		res.Reasons = append(res.Reasons, ie.Error())
	} else if err != nil {
		var reason string
		reason, kernelFault = r.classify(err)
		res.Reasons = append(res.Reasons, reason)
	}
	if r.guest != nil {
		r.guest.stop(0)
		res.ConsoleTail = r.guest.output().tail(60)
	}
	res.Dropped = r.dropped()
	if res.Verdict == results.Error {
		return
	}
	var rec *record // what the timeline recorded, copied once for the figures and the assertions
	if r.tl != nil {
		rec = r.tl.record()
		res.Steps = r.tl.steps
		// samples.jsonl is the run's evidence: a run that could not keep
		// it is ERROR (unless the kernel was implicated anyway).
		if werr := r.tl.writeSamples(filepath.Join(r.cfg.OutDir, results.SamplesFile)); werr != nil {
			res.Reasons = append(res.Reasons, werr.Error())
		}
		if cut := r.tl.samplesDropped(); cut != "" {
			if res.Dropped == nil {
				res.Dropped = &results.Dropped{}
			}
			res.Dropped.Samples = cut
			if r.cfg.Logf != nil {
				r.cfg.Logf("%s", res.Dropped)
			}
		}
		res.Loads = r.tl.loadResults()
		res.Figures = r.tl.figures(rec, r.s.Machine.CPUs)
		res.Polls = metrics.PollRates(r.tl.pollSnapshots())
		res.Injections = r.tl.injections()
		res.Coverage = r.tl.coverage(r.cover)
		res.Kselftests = r.tl.ks.results
	}
	if r.guest != nil {
		res.Asserts = append(res.Asserts, r.splats())
	}
	if r.tl != nil {
		res.Knobs = r.tl.knobs()
	}
	if r.tl != nil && err == nil {
		for _, a := range r.s.Asserts {
			if a.NoSplat == nil {
				res.Asserts = append(res.Asserts, r.tl.s.Evaluate(rec, a))
			}
		}
		res.Asserts = append(res.Asserts, r.tl.invariants(res.Kernel.Release, res.Knobs, res.Loads)...)
	}
	for _, a := range res.Asserts {
		if !a.Passed {
			res.Reasons = append(res.Reasons, a.Reason())
			kernelFault = kernelFault || !a.Unmeasured
		}
	}
	ks := kselftestReasons(res.Kselftests)
	res.Reasons = append(res.Reasons, ks...)
	kernelFault = kernelFault || len(ks) > 0
	switch {
	case kernelFault:
		res.Verdict = results.Fail
	case len(res.Reasons) > 0:
		// A lab fault or an assertion the lab could not measure, and
		// nothing that implicates the kernel.
		res.Verdict = results.Error
	default:
		res.Verdict = results.Pass
	}
}

// classify names what err says happened and whether it implicates the
// kernel: a deadline miss the evidence pins on the kernel (judgeHang), a
// guest that died (guestEnd), a boot that started and died, an operation
// the kernel refused with an errno, a program in the guest that exited
// non-zero, a wait whose condition never held. Anything else (the agent's
// own faults, send or decode failures, QEMU killed or failing, timeouts
// without evidence) is the lab's. A sched step that found too few tasks
// counts as a wait that never held.
func (r *run) classify(err error) (reason string, kernel bool) {
	var hang *hangError
	var se *stepError
	var ge *guestError
	var be *bootError
	var xe *exitError
	var we *waitError
	var fe *tooFewError
	switch {
	case errors.As(err, &hang):
		return r.judgeHang(hang)
	case errors.Is(err, errAgentGone) && r.guest != nil && exited(r.guest):
		why, kernel := r.guestEnd()
		if !kernel {
			if errors.As(err, &se) {
				return fmt.Sprintf("the guest ended during step %q (line %d): %s", se.step, se.line, why), false
			}
			return "the guest ended: " + why, false
		}
		if errors.As(err, &se) {
			return fmt.Sprintf("the guest died during step %q (line %d): %s", se.step, se.line, why), true
		}
		return "the guest died: " + err.Error() + ": " + why, true
	case errors.As(err, &be), errors.As(err, &xe), errors.As(err, &we), errors.As(err, &fe):
		return err.Error(), true
	case errors.As(err, &ge) && ge.kernelRefused():
		return err.Error(), true
	}
	return err.Error(), false
}

func hangReason(h *results.Hang) string {
	s := fmt.Sprintf("hang: step %q (line %d) did not finish within %s", h.Step, h.Line, h.Deadline)
	if h.Function != "" {
		s += ": hung in " + h.Function
	}
	return s
}

// hangEvidence asks the agent for SysRq-w and the stacks of blocked tasks,
// names the function the stuck task sleeps in, and records in h.facts
// what judgeHang decides by.
// It has evidenceTimeout, past ctx's end, unless ctx's run is aborted.
func (r *run) hangEvidence(ctx context.Context, h *hangError) {
	r.res.Hang = &results.Hang{Step: h.step, Line: h.line, Deadline: h.deadline.String()}
	defer func() {
		if h.facts.share.wall > 0 {
			r.res.Hang.Host = h.facts.share.String()
		}
	}()
	if r.ctl == nil || r.guest == nil {
		return
	}
	ctx, cancel := cleanupCtx(ctx, evidenceTimeout)
	defer cancel()
	con := r.guest.output()
	from := con.count()
	// SysRq-w (blocked tasks) and -l (backtraces of all CPUs), through the
	// agent, or through QEMU's keyboard when the agent does not answer.
	var agentErr error
	for _, k := range []string{"w", "l"} {
		if agentErr == nil {
			sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
			agentErr = r.ctl.call(sctx, wire.OpSysrq, wire.Sysrq{Key: k}, nil)
			scancel()
		}
	}
	if agentErr != nil {
		switch err := r.guest.sysrq(ctx, "w", "l"); {
		case errors.Is(err, errNoSysrq):
		case err != nil:
			agentErr = fmt.Errorf("%v; %v", agentErr, err)
		default:
			agentErr = fmt.Errorf("%v (SysRq sent through the QEMU monitor)", agentErr)
		}
	}
	var tasks []wire.TaskStack
	var b strings.Builder
	if agentErr != nil {
		fmt.Fprintf(&b, "agent did not take SysRq: %v\n", agentErr)
	}
	// A task looping in usleep (napi_disable) is runnable between its
	// sleeps: look again when no agent thread was caught blocked, before
	// naming a victim (a kworker waiting for rtnl) instead.
	answered := false
	for try := 0; try < stackTries; try++ {
		tasks = nil
		if err := r.ctl.call(ctx, wire.OpStacks, nil, &tasks); err != nil {
			fmt.Fprintf(&b, "agent did not answer for stacks: %v\n", err)
			break
		}
		answered = true
		if agentBlocked(tasks) || ctx.Err() != nil {
			break
		}
		time.Sleep(stackRetry)
	}
	for _, t := range tasks {
		fmt.Fprintf(&b, "pid %d %s state %s wchan %s\n%s\n", t.PID, t.Comm, t.State, t.Wchan, t.Stack)
	}
	r.res.Hang.Function = stuckFunction(tasks)
	// Let the SysRq output reach the console.
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
	con.waitFor(wctx, "sysrq: Show Blocked State", from)
	wcancel()
	select {
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond):
	}
	after := con.tail(con.count() - from)
	b.WriteString("--- console after the deadline ---\n")
	b.WriteString(after)
	r.res.Hang.Evidence = b.String()
	h.facts.gathered, h.facts.running, h.facts.answered = true, !exited(r.guest), answered
	h.facts.blocked, h.facts.looping = blockedTask(tasks, after), loopingAgent(tasks)
	if h.facts.share.starved() && len(stuckTasks(tasks)) > 0 {
		h.facts.still, h.facts.more = r.recheckStarved(ctx, tasks)
		r.res.Hang.Evidence += fmt.Sprintf("--- rechecked while starved: %s; still stuck: %q ---\n", h.facts.more, h.facts.still)
	}
}

// splats checks the console: every splat fails the run unless a no-splat
// assertion allows its title.
func (r *run) splats() results.Assert {
	a := results.Assert{Name: "no kernel splat", Kind: "no-splat", Bound: "0 splats"}
	var allow []scenarios.Allow
	for _, as := range r.s.Asserts {
		if as.NoSplat != nil {
			allow = append(allow, as.NoSplat.Allow...)
			a.Line = as.Pos.Line
			if as.Name != "" {
				a.Name = as.Name
			}
		}
	}
	found := splat.FindLines(r.guest.output().lines())
	for i := range found {
		r.placeSplat(&found[i])
	}
	found = append(found, r.leak.leaks...)
	var bad []string
	for i := range found {
		sp := &found[i]
		for _, al := range allow {
			if regexp.MustCompile(al.Title).MatchString(sp.Title) {
				sp.Allowed = al.Reason
			}
		}
		if sp.Allowed == "" {
			bad = append(bad, fmt.Sprintf("%s (%s)", sp.Title, sp.Where()))
		}
	}
	r.res.Splats = found
	a.Measured = fmt.Sprintf("%d splats", len(bad))
	if r.leak.err != nil {
		// The console was read, the leaks were not: without a splat the
		// lab cannot tell (ERROR, not PASS).
		a.Unmeasured = len(bad) == 0
		bad = append(bad, "kmemleak scan failed: "+r.leak.err.Error())
	}
	a.Passed = len(bad) == 0
	a.Detail = strings.Join(bad, "\n")
	if len(bad) > 0 {
		a.Measured += ": " + strings.Join(bad, "; ")
	}
	return a
}

// setupStep names the topology setup where a step name is expected.
const setupStep = "topology setup"

// placeAt names the innermost step running at host time at, or the
// topology setup when it was before the timeline.
func (r *run) placeAt(sp *results.Splat, at time.Time) {
	if r.tl == nil {
		return
	}
	if !r.setupAt.IsZero() && !at.Before(r.setupAt) && at.Before(r.tl.start) {
		sp.Step, sp.Offset = setupStep, math.Round(at.Sub(r.setupAt).Seconds()*100)/100
		return
	}
	var best *span
	for i := range r.tl.spans {
		s := &r.tl.spans[i]
		if !at.Before(s.start) && !at.After(s.end) && (best == nil || s.start.After(best.start)) {
			best = s
		}
	}
	if best != nil {
		sp.Step, sp.Offset = best.name, math.Round(at.Sub(best.start).Seconds()*100)/100
	}
}

// placeSplat names the innermost step running when the splat's first line arrived.
func (r *run) placeSplat(sp *results.Splat) {
	r.placeAt(sp, r.guest.output().lineTime(sp.Line))
}

// agentComm is the agent's name in the guest (it is /init); its threads run
// the scenario's actions.
const agentComm = "init"

// stackTries and stackRetry bound the looks for a blocked agent thread
// (3 s: a usleep loop under TCG was missed in 5 looks 200 ms apart).
const (
	stackTries = 30
	stackRetry = 100 * time.Millisecond
)

// agentBlocked says whether an agent thread is in D state.
func agentBlocked(tasks []wire.TaskStack) bool {
	for _, t := range tasks {
		if t.State == "D" && t.Comm == agentComm {
			return true
		}
	}
	return false
}

// goRuntimeWait matches the kernel stacks of the Go runtime's own waits
// (futex, epoll, nanosleep): an agent thread there is idle, not stuck.
var goRuntimeWait = regexp.MustCompile(`\b(futex_\w+|do_futex|ep_poll|do_epoll_wait|do_nanosleep|hrtimer_nanosleep)\+`)

// stuckFunction names where the hung action sleeps: the blocked agent thread
// runs it, while other blocked tasks (a kworker waiting for RTNL, say) are
// usually its victims. An agent thread caught runnable inside the kernel (a
// usleep loop between sleeps) still beats a victim.
func stuckFunction(tasks []wire.TaskStack) string {
	passes := []func(wire.TaskStack) bool{
		func(t wire.TaskStack) bool { return t.Comm == agentComm && t.State == "D" },
		func(t wire.TaskStack) bool {
			return t.Comm == agentComm && t.State == "R" && !goRuntimeWait.MatchString(t.Stack)
		},
		func(t wire.TaskStack) bool { return t.State == "D" },
	}
	for _, take := range passes {
		for _, t := range tasks {
			if !take(t) {
				continue
			}
			if f := splat.StackFrame(t.Stack); f != "" {
				return f
			}
		}
	}
	return ""
}
