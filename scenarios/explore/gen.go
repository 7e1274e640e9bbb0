// Package explore writes random scenarios that turn the NAPI knobs under
// load (lab explore), and shrinks a failing one to a small reproducer. It
// knows nothing of VMs: a program is YAML, and whoever runs it judges it.
package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"napilab/scenarios"
)

// Step is one generated timeline entry: an action, how it repeats, or
// parallel branches.
type Step struct {
	Kind     string // the knob that drew it ("link"); "" in a parallel step
	Action   string // the action's YAML, one line ("link: {dev: eth0, state: down}")
	Repeat   string // "" once, or ", every: 50ms, count: 5"
	Branches []Step // set: a parallel step of these
}

// Program is a generated scenario: the shipped NIC and veth fragments, their
// loads started first and stopped last, and Steps between; beside them the
// witness fragment's load, on devices no knob names, so that udp-conserved
// judges its namespace in every program.
type Program struct {
	Seed   uint64
	Parent uint64 // the seed of the corpus program it was mutated from; 0: drawn afresh
	Steps  []Step
	// Delay is a probe that busy-waits at a function the steps reach, armed
	// from the start; inject steps switch it. Nil: none.
	Delay *Delay
	// BusyPoll are the loads whose receiving socket busy-polls its NAPI
	// (SO_BUSY_POLL 50us): napi_busy_loop beside softirq or the kthread,
	// which the busy_poll sysctl alone never starts. Sorted.
	BusyPoll []string `json:",omitempty"`
}

// loadNames are the fragments' loads, in the order the timeline starts them.
var loadNames = []string{"nic-udp", "veth-udp"}

// drawBusyPoll draws the busy-polling loads of seed from a stream of its
// own, so a seed's steps are what they were before loads could busy-poll:
// half the programs have none, a quarter the NIC's, an eighth the veth's,
// an eighth both.
func drawBusyPoll(seed uint64) []string {
	switch rand.New(rand.NewPCG(seed, 0x62757379)).IntN(8) { // "busy"
	case 0, 1:
		return []string{"nic-udp"}
	case 2:
		return []string{"veth-udp"}
	case 3:
		return slices.Clone(loadNames)
	}
	return nil
}

// Delay is a generated race-widening probe (scenarios.Inject).
type Delay struct {
	At          string // a function every base has
	Delay       string // "500us"
	Probability string // "0.3"
	Count       int    // most firings: Delay×Count stays under a second
}

// DefaultSteps is a program's length: an order of three knobs on one
// device (threaded on, down, threaded off: the 7.3.4 hang) is in 1.4% of
// 8-step programs, 3.7% of 12-step and 7.4% of 16-step ones, and a run's
// boot and setup cost more than its timeline.
const DefaultSteps = 16

// Options bound what Generate writes.
type Options struct {
	Steps   int    // timeline steps between the loads' start and stop (default DefaultSteps)
	Release string // the kernel's release (uname -r): knobs newer than it are left out
}

// knob is a kind of step: its weight among the others, the oldest release
// that has it, and a random instance.
type knob struct {
	name   string
	weight int
	min    string
	gen    func(d *drawer) string
}

// devs are the devices of the fragments: the NIC and the veth in the root
// namespace.
var devs = []string{"eth0", "vrx"}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// knobs are the NAPI control plane the generator turns.
var knobs = []knob{
	{"threaded", 6, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf(`write: {path: /sys/class/net/%s/threaded, value: "%s"}`, d.dev(), pick(r, "0", "1"))
	}},
	{"link", 5, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf("link: {dev: %s, state: %s}", d.dev(), pick(r, "down", "up"))
	}},
	{"gro", 2, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf("gro: {dev: vrx, enabled: %v}", r.IntN(2) == 0)
	}},
	{"xdp", 2, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf("xdp: {dev: %s, attached: %v}", d.dev(), r.IntN(2) == 0)
	}},
	{"channels", 2, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf("channels: {dev: eth0, values: [%d]}", 1+r.IntN(2))
	}},
	{"rps", 2, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf(`rps: {dev: %s, cpus: ["%s"]}`, d.dev(), pick(r, "0", "1", "2", "3"))
	}},
	{"busy_poll", 1, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf(`sysctl: {name: net.core.busy_poll, value: "%s"}`, pick(r, "0", "50"))
	}},
	{"napi defer", 1, "6.13", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf("napi: {dev: eth0, defer_hard_irqs: %d, gro_flush_timeout: %s}", pick(r, 0, 2, 100), pick(r, "0s", "20us", "1ms"))
	}},
	{"napi threaded", 2, "6.18", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf("napi: {dev: eth0, threaded: %s}", pick(r, "disabled", "enabled"))
	}},
	{"xps", 1, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf(`xps: {dev: eth0, queues: [0], cpus: ["%s"]}`, pick(r, "0", "1", "2", "3"))
	}},
	{"qdisc", 1, "", func(d *drawer) string {
		r := d.r
		dev := d.dev()
		if k := pick(r, "pfifo", "fq_codel", "pfifo_fast"); k != "pfifo_fast" {
			return fmt.Sprintf("qdisc: {dev: %s, kind: %s, limit: %d}", dev, k, pick(r, 0, 10, 1000))
		}
		return fmt.Sprintf("qdisc: {dev: %s, kind: pfifo_fast}", dev)
	}},
	{"affinity", 1, "", func(d *drawer) string {
		r := d.r
		// min: 0, the kthreads exist only while threaded is on; no real-time
		// or idle policy: a starved receiver is the lab's doing, not the kernel's.
		switch r.IntN(3) {
		case 0:
			return fmt.Sprintf(`sched: {task: napi/, cpus: "%s", min: 0}`, pick(r, "0", "1", "0-1"))
		case 1:
			return fmt.Sprintf("sched: {task: napi/, policy: %s, nice: %d, min: 0}", pick(r, "other", "batch"), pick(r, -5, 0, 19))
		}
		return fmt.Sprintf(`irq: {match: 'virtio[0-9]+-input\.0', cpus: "%s"}`, pick(r, "0", "1", "0-1"))
	}},
	{"inject", 1, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf("inject: {name: delay, armed: %v}", r.IntN(2) == 0)
	}},
	{"sleep", 2, "", func(d *drawer) string {
		r := d.r
		return fmt.Sprintf("sleep: %dms", pick(r, 10, 50, 200))
	}},
}

// debugDeadline gives each step 30 s on the debug flavour: there a qdisc
// replacement waited in synchronize_rcu past the plain 5 s (init in D
// state, QEMU busy; regress-xps-map-leak-6.1.debug under TCG), a slow
// grace period, not a hang.
const debugDeadline = `flavours:
  debug:
    reason: >-
      a qdisc replacement waited in synchronize_rcu past 5 s on the debug flavour under TCG
      (KASAN, lockdep): a slow grace period, not a hang
    params: {deadline: 30s}
`

// tolerated are the refusals a random order of knobs may legitimately get
// (a channel change while down, XDP beside GRO, ...): not findings.
const tolerated = "[EBUSY, EINVAL, EOPNOTSUPP, ENETDOWN, EAGAIN, ENOMEM, ERANGE]"

// delayAt are functions every base has (6.1-7.3, not inlined) that the
// knobs and loads reach: a delay there widens the races between them.
var delayAt = []string{"napi_enable", "napi_disable", "napi_complete_done", "net_rx_action", "__napi_schedule", "napi_schedule_prep"}

// Watched are the NAPI functions whose calls a run counts for the corpus:
// the control plane the knobs lead to (a kernel without a symbol for one
// counts the others). Hot-path functions (napi_complete_done, the drivers'
// polls) are left out: their counts follow the host's noise, not the
// kernel's state, and each probe costs about a second of setup under TCG.
var Watched = []string{
	"napi_disable", "napi_enable", "napi_threaded_poll", "napi_busy_loop", "dev_set_threaded",
	"napi_set_threaded", "netif_set_real_num_rx_queues", "veth_napi_del",
}

// drawer draws steps from the knobs the release has.
type drawer struct {
	r     *rand.Rand
	ks    []knob
	total int
	delay bool   // the program has a Delay: inject steps may be drawn
	focus string // the device three steps in four turn
}

func newDrawer(r *rand.Rand, o Options, delay bool) *drawer {
	d := &drawer{r: r, delay: delay, focus: pick(r, devs...)}
	for _, k := range knobs {
		if k.min == "" || !scenarios.ReleaseBefore(o.Release, k.min) {
			d.ks = append(d.ks, k)
			d.total += k.weight
		}
	}
	return d
}

// dev is the device a step turns: the program's focus three times in
// four. Bugs sit in orders of knobs on one device (threaded, down, threaded
// again on eth0); a device drawn afresh each step seldom makes one.
func (d *drawer) dev() string {
	if d.r.IntN(4) < 3 {
		return d.focus
	}
	if d.focus == devs[0] {
		return devs[1]
	}
	return devs[0]
}

// step draws one step; inBranch steps are never repeated sleeps.
func (d *drawer) step() Step {
	for {
		n := d.r.IntN(d.total)
		for _, k := range d.ks {
			if n -= k.weight; n >= 0 {
				continue
			}
			if k.name == "inject" && !d.delay {
				break
			}
			st := Step{Kind: k.name, Action: k.gen(d)}
			if k.name != "sleep" && d.r.IntN(4) == 0 {
				st.Repeat = fmt.Sprintf(", every: %dms, count: %d", pick(d.r, 20, 50, 100), 2+d.r.IntN(8))
			}
			return st
		}
	}
}

// entry draws a timeline entry: a step or, one time in five, a parallel
// step of two.
func (d *drawer) entry() Step {
	if d.r.IntN(5) == 0 {
		return Step{Branches: []Step{d.step(), d.step()}}
	}
	return d.step()
}

// Generate writes the program of seed: deterministic for a seed and options.
func Generate(seed uint64, o Options) Program {
	if o.Steps <= 0 {
		o.Steps = DefaultSteps
	}
	r := rand.New(rand.NewPCG(seed, 0x6e617069)) // "napi"
	p := Program{Seed: seed}
	if r.IntN(3) == 0 {
		p.Delay = newDelay(r)
	}
	d := newDrawer(r, o, p.Delay != nil)
	for range o.Steps {
		p.Steps = append(p.Steps, d.entry())
	}
	p.BusyPoll = drawBusyPoll(seed)
	return p.sane()
}

// newDelay draws a probe whose firings add up to at most half a second.
func newDelay(r *rand.Rand) *Delay {
	us := pick(r, 100, 500, 2000)
	return &Delay{At: pick(r, delayAt...), Delay: fmt.Sprintf("%dus", us),
		Probability: pick(r, "0.05", "0.3", "1"), Count: 500_000 / us}
}

// sane drops the steps the lab, not the kernel, would fail on: napi-set
// needs the device's NAPIs, which a down device does not list, so a napi
// step stays only while eth0 is up and never in a parallel branch (its
// order against its sibling is unknown); inject steps need the Delay. In a
// branch a down counts, an up does not. Generate and Mutate both end here,
// so the rule is kept in one place.
func (p Program) sane() Program {
	down := map[string]bool{}
	keep := func(st Step, branch bool) bool {
		switch {
		case strings.HasPrefix(st.Kind, "napi"):
			return !down["eth0"] && !branch
		case st.Kind == "inject":
			return p.Delay != nil
		case st.Kind == "link":
			dev, state := linkOf(st.Action)
			down[dev] = state == "down" || branch && down[dev]
		}
		return true
	}
	var steps []Step
	for _, st := range p.Steps {
		if len(st.Branches) == 0 {
			if keep(st, false) {
				steps = append(steps, st)
			}
			continue
		}
		var brs []Step
		for _, br := range st.Branches {
			if keep(br, true) {
				brs = append(brs, br)
			}
		}
		switch len(brs) {
		case 0:
		case 1:
			steps = append(steps, brs[0])
		default:
			steps = append(steps, Step{Branches: brs})
		}
	}
	p.Steps = steps
	return p
}

// needs is the oldest release that has every knob of p ("" for any).
func (p Program) needs() string {
	need := ""
	for _, st := range p.flat() {
		for _, k := range knobs {
			if k.name == st.Kind && k.min != "" && (need == "" || scenarios.ReleaseBefore(need, k.min)) {
				need = k.min
			}
		}
	}
	return need
}

// flat is every step of p, the branches of a parallel step in its place.
func (p Program) flat() []Step {
	var all []Step
	for _, st := range p.Steps {
		if len(st.Branches) == 0 {
			all = append(all, st)
		}
		all = append(all, st.Branches...)
	}
	return all
}

// fits says whether every knob of p is in release (a corpus read back
// may come from another kernel's exploration).
func (p Program) fits(release string) bool {
	need := p.needs()
	return need == "" || !scenarios.ReleaseBefore(release, need)
}

// linkOf reads the device and state of a generated link step.
func linkOf(action string) (dev, state string) {
	fmt.Sscanf(action, "link: {dev: %s state: %s", &dev, &state)
	return strings.TrimSuffix(dev, ","), strings.TrimSuffix(state, "}")
}

// YAML is the program as a scenario file named name, which includes the
// shipped fragments (the include search path finds them from anywhere).
func (p Program) YAML(name, header string) []byte {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(header), "\n") {
		if l != "" {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	fmt.Fprintf(&b, "name: %s\n", name)
	from := ""
	if p.Parent != 0 {
		from = fmt.Sprintf(", mutated from seed %d", p.Parent)
	}
	fmt.Fprintf(&b, "description: a random order of NAPI knobs under load (lab explore, seed %d%s)\n", p.Seed, from)
	if need := p.needs(); need != "" {
		fmt.Fprintf(&b, "kernel: {min: \"%s\", reason: the napi-set knobs it turns}\n", need)
	}
	b.WriteString("include: [fragments/nic.yaml, fragments/veth-peer.yaml, fragments/witness.yaml]\n")
	fmt.Fprintf(&b, "params:\n  # refusals a random order of knobs may get (not findings)\n  refusals: \"%s\"\n  deadline: 5s\n", tolerated)
	b.WriteString(debugDeadline)
	b.WriteString("defaults: {deadline: \"${deadline}\"}\n")
	if d := p.Delay; d != nil {
		fmt.Fprintf(&b, "inject:\n  - {name: delay, at: %s, delay: %s, probability: %s, count: %d}\n", d.At, d.Delay, d.Probability, d.Count)
	}
	if len(p.BusyPoll) > 0 {
		b.WriteString("loads:\n")
		for _, l := range p.BusyPoll {
			fmt.Fprintf(&b, "  %s: {busy_poll: 50}\n", l)
		}
	}
	b.WriteString("timeline:\n  - start: [nic-udp, veth-udp, witness-udp]\n")
	for i, st := range p.Steps {
		writeStep(&b, st, fmt.Sprintf("s%d", i+1), "  ")
	}
	b.WriteString("  - sleep: 500ms\n  - stop: [nic-udp, veth-udp, witness-udp]\n")
	b.WriteString("asserts:\n  - no-splat: {}\n")
	return []byte(b.String())
}

func writeStep(b *strings.Builder, st Step, name, indent string) {
	if len(st.Branches) > 0 {
		fmt.Fprintf(b, "%s- name: %s\n%s  parallel:\n", indent, name, indent)
		for i, br := range st.Branches {
			writeStep(b, br, fmt.Sprintf("%s.%d", name, i+1), indent+"    ")
		}
		return
	}
	tol := `, tolerate: "${refusals}"`
	if strings.HasPrefix(st.Action, "sleep:") {
		tol = ""
	}
	fmt.Fprintf(b, "%s- {name: %s, %s%s%s}\n", indent, name, st.Action, st.Repeat, tol)
}

// Size is the program's steps, counting each parallel branch, the delay
// probe and each busy-polling load.
func (p Program) Size() int {
	n := len(p.BusyPoll)
	if p.Delay != nil {
		n++
	}
	for _, st := range p.Steps {
		n += max(1, len(st.Branches))
	}
	return n
}
