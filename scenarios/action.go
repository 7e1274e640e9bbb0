package scenarios

import (
	"context"
	"time"
)

// An action is one kind of timeline step: write, xdp, sched, .... Each kind
// has a file, action_<kind>.go, holding its YAML type (the Step field of
// that key) and these methods; actionKinds lists the kinds.
type action interface {
	// check reports what is wrong with the action of st.
	check(k *checker, st *Step)
	// explain says what one run does and how long it takes (0: no time).
	explain() (time.Duration, string)
	// label names a step without a name: in results and logs.
	label() string
	// run performs repetition i of st (from 0) against the lab.
	run(ctx context.Context, lab Lab, st *Step, i int) error
}

// valuer is an action whose repetitions set a value (see Step.Value).
type valuer interface {
	value(i int) string
}

// defaulter is an action with defaults to fill before validation.
type defaulter interface {
	setDefaults()
}

// actionKinds lists the actions a step may hold, in the order messages name
// them: of returns the step's action of that kind and whether it is set.
var actionKinds = []struct {
	name string
	of   func(*Step) (action, bool)
}{
	{"write", func(st *Step) (action, bool) { return st.Write, st.Write != nil }},
	{"sysctl", func(st *Step) (action, bool) { return st.Sysctl, st.Sysctl != nil }},
	{"link", func(st *Step) (action, bool) { return st.Link, st.Link != nil }},
	{"gro", func(st *Step) (action, bool) { return st.GRO, st.GRO != nil }},
	{"channels", func(st *Step) (action, bool) { return st.Channels, st.Channels != nil }},
	{"xdp", func(st *Step) (action, bool) { return st.XDP, st.XDP != nil }},
	{"qdisc", func(st *Step) (action, bool) { return st.Qdisc, st.Qdisc != nil }},
	{"napi", func(st *Step) (action, bool) { return st.NAPI, st.NAPI != nil }},
	{"inject", func(st *Step) (action, bool) { return st.Inject, st.Inject != nil }},
	{"rps", func(st *Step) (action, bool) { return st.RPS, st.RPS != nil }},
	{"xps", func(st *Step) (action, bool) { return st.XPS, st.XPS != nil }},
	{"irq", func(st *Step) (action, bool) { return st.IRQ, st.IRQ != nil }},
	{"sched", func(st *Step) (action, bool) { return st.Sched, st.Sched != nil }},
	{"exec", func(st *Step) (action, bool) { return st.Exec, st.Exec != nil }},
	{"kselftest", func(st *Step) (action, bool) { return kselftests(st.Kselftest), len(st.Kselftest) > 0 }},
	{"start", func(st *Step) (action, bool) { return startLoads(st.Start), len(st.Start) > 0 }},
	{"stop", func(st *Step) (action, bool) { return stopLoads(st.Stop), len(st.Stop) > 0 }},
	{"sleep", func(st *Step) (action, bool) { return sleep(st.Sleep), st.Sleep > 0 }},
	{"wait", func(st *Step) (action, bool) { return st.Wait, st.Wait != nil }},
	{"parallel", func(st *Step) (action, bool) { return parallel(st.Parallel), len(st.Parallel) > 0 }},
}

// Actions lists the step kinds, for messages and documentation.
var Actions = func() []string {
	var out []string
	for _, k := range actionKinds {
		out = append(out, k.name)
	}
	return out
}()

// Lab is what actions run against: the runner's timeline implements it.
type Lab interface {
	// Call sends one request (a wire op and its args) to the guest agent
	// and decodes the answer into reply (nil: none wanted).
	Call(ctx context.Context, op string, args, reply any) error
	// StartLoad starts a load's sink, then its sender.
	StartLoad(ctx context.Context, name string) error
	// StopLoad stops a load's sender, then its sink, keeping their counts.
	StopLoad(ctx context.Context, name string) error
	// Wait polls until w holds; its timeout passing is an error.
	Wait(ctx context.Context, w *Wait) error
	// Sched tunes the tasks x names; fewer than x.MinTasks() is an error.
	Sched(ctx context.Context, x *Sched) error
	// Exec runs an exec step's program (run counts from 1) and keeps its output.
	Exec(ctx context.Context, st *Step, run int) error
	// Kselftest runs one upstream selftest of st and records its result.
	Kselftest(ctx context.Context, st *Step, name string) error
}

// held returns the kinds of the actions the step holds, and the actions.
func (st *Step) held() ([]string, []action) {
	var names []string
	var acts []action
	for _, k := range actionKinds {
		if a, ok := k.of(st); ok {
			names, acts = append(names, k.name), append(acts, a)
		}
	}
	return names, acts
}

// action returns the step's one action, or nil when it holds none or several.
func (st *Step) action() action {
	if _, acts := st.held(); len(acts) == 1 {
		return acts[0]
	}
	return nil
}

// Action is the kind of the step's action.
func (st *Step) Action() string {
	if names, _ := st.held(); len(names) == 1 {
		return names[0]
	}
	return ""
}

// Label names the step in results and logs: its name:, or what it does.
func (st *Step) Label() string {
	if st.Name != "" {
		return st.Name
	}
	if a := st.action(); a != nil {
		return a.label()
	}
	return ""
}

// Value is what iteration i of a repeated step sets: the written value
// (write, sysctl), up/down (link), on/off (gro, inject), attach/detach
// (xdp), the channel count, the RPS mask or the NAPIs' threaded mode; "" for
// other actions. The runner performs exactly this, and each: assertions map
// it to an expected context.
func (st *Step) Value(i int) string {
	if v, ok := st.action().(valuer); ok {
		return v.value(i)
	}
	return ""
}

// Run performs repetition i (from 0) of the step's action against lab; a
// step without one action does nothing. The runner runs a parallel step's
// branches itself.
func (st *Step) Run(ctx context.Context, lab Lab, i int) error {
	if a := st.action(); a != nil {
		return a.run(ctx, lab, st, i)
	}
	return nil
}

// inNetns says " in netns n" for a namespace other than the root one.
func inNetns(n string) string {
	if n == "" {
		return ""
	}
	return " in netns " + n
}
