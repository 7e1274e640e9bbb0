// Package explore writes random scenarios that turn the NAPI knobs under
// load (lab explore), and shrinks a failing one to a small reproducer. It
// knows nothing of VMs: a program is YAML, and whoever runs it judges it.
package explore

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"napilab/scenarios"
)

// Step is one generated timeline entry: an action, how it repeats, or
// parallel branches.
type Step struct {
	Action   string // the action's YAML, one line ("link: {dev: eth0, state: down}")
	Repeat   string // "" once, or ", every: 50ms, count: 5"
	Branches []Step // set: a parallel step of these
}

// Program is a generated scenario: the shipped NIC and veth fragments, their
// loads started first and stopped last, and Steps between.
type Program struct {
	Seed  uint64
	Steps []Step
}

// Options bound what Generate writes.
type Options struct {
	Steps   int    // timeline steps between the loads' start and stop (default 8)
	Release string // the kernel's release (uname -r): knobs newer than it are left out
}

// knob is a kind of step: its weight among the others, the oldest release
// that has it, and a random instance.
type knob struct {
	name   string
	weight int
	min    string
	gen    func(r *rand.Rand) string
}

// devs are the devices of the fragments: the NIC and the veth in the root
// namespace.
var devs = []string{"eth0", "vrx"}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// knobs are the NAPI control plane the generator turns.
var knobs = []knob{
	{"threaded", 6, "", func(r *rand.Rand) string {
		return fmt.Sprintf(`write: {path: /sys/class/net/%s/threaded, value: "%s"}`, pick(r, devs...), pick(r, "0", "1"))
	}},
	{"link", 5, "", func(r *rand.Rand) string {
		return fmt.Sprintf("link: {dev: %s, state: %s}", pick(r, devs...), pick(r, "down", "up"))
	}},
	{"gro", 2, "", func(r *rand.Rand) string {
		return fmt.Sprintf("gro: {dev: vrx, enabled: %v}", r.IntN(2) == 0)
	}},
	{"xdp", 2, "", func(r *rand.Rand) string {
		return fmt.Sprintf("xdp: {dev: %s, attached: %v}", pick(r, devs...), r.IntN(2) == 0)
	}},
	{"channels", 2, "", func(r *rand.Rand) string {
		return fmt.Sprintf("channels: {dev: eth0, values: [%d]}", 1+r.IntN(2))
	}},
	{"rps", 2, "", func(r *rand.Rand) string {
		return fmt.Sprintf(`rps: {dev: %s, cpus: ["%s"]}`, pick(r, devs...), pick(r, "0", "1", "2", "3"))
	}},
	{"busy_poll", 1, "", func(r *rand.Rand) string {
		return fmt.Sprintf(`sysctl: {name: net.core.busy_poll, value: "%s"}`, pick(r, "0", "50"))
	}},
	{"napi defer", 1, "6.13", func(r *rand.Rand) string {
		return fmt.Sprintf("napi: {dev: eth0, defer_hard_irqs: %d, gro_flush_timeout: %s}", pick(r, 0, 2, 100), pick(r, "0s", "20us", "1ms"))
	}},
	{"napi threaded", 2, "6.18", func(r *rand.Rand) string {
		return fmt.Sprintf("napi: {dev: eth0, threaded: %s}", pick(r, "disabled", "enabled"))
	}},
	{"sleep", 2, "", func(r *rand.Rand) string {
		return fmt.Sprintf("sleep: %dms", pick(r, 10, 50, 200))
	}},
}

// tolerated are the refusals a random order of knobs may legitimately get
// (a channel change while down, XDP beside GRO, ...): not findings.
const tolerated = "[EBUSY, EINVAL, EOPNOTSUPP, ENETDOWN, EAGAIN, ENOMEM, ERANGE]"

// Generate writes the program of seed: deterministic for a seed and options.
func Generate(seed uint64, o Options) Program {
	if o.Steps <= 0 {
		o.Steps = 8
	}
	r := rand.New(rand.NewPCG(seed, 0x6e617069)) // "napi"
	var ks []knob
	total := 0
	for _, k := range knobs {
		if k.min == "" || !scenarios.ReleaseBefore(o.Release, k.min) {
			ks = append(ks, k)
			total += k.weight
		}
	}
	// down tracks the links the program took down: napi-set needs the
	// device's NAPIs, which a down device does not list (the lab's ERROR,
	// not the kernel's), so it is drawn only while eth0 is up, and never in
	// a parallel branch, whose order against its sibling is unknown.
	down := map[string]bool{}
	one := func(branch bool) Step {
	draw:
		n := r.IntN(total)
		for _, k := range ks {
			if n -= k.weight; n < 0 {
				if strings.HasPrefix(k.name, "napi") && (down["eth0"] || branch) {
					goto draw
				}
				st := Step{Action: k.gen(r)}
				if k.name == "link" {
					// In a branch the order is unknown: a down counts, an up does not.
					dev, state := linkOf(st.Action)
					down[dev] = state == "down" || branch && down[dev]
				}
				if k.name != "sleep" && r.IntN(4) == 0 {
					st.Repeat = fmt.Sprintf(", every: %dms, count: %d", pick(r, 20, 50, 100), 2+r.IntN(8))
				}
				return st
			}
		}
		panic("unreachable")
	}
	p := Program{Seed: seed}
	for range o.Steps {
		if r.IntN(5) == 0 {
			p.Steps = append(p.Steps, Step{Branches: []Step{one(true), one(true)}})
			continue
		}
		p.Steps = append(p.Steps, one(false))
	}
	return p
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
	fmt.Fprintf(&b, "description: a random order of NAPI knobs under load (lab explore, seed %d)\n", p.Seed)
	b.WriteString("include: [fragments/nic.yaml, fragments/veth-peer.yaml]\n")
	fmt.Fprintf(&b, "params:\n  # refusals a random order of knobs may get (not findings)\n  refusals: \"%s\"\n", tolerated)
	b.WriteString("defaults: {deadline: 5s}\n")
	b.WriteString("timeline:\n  - start: [nic-udp, veth-udp]\n")
	for i, st := range p.Steps {
		writeStep(&b, st, fmt.Sprintf("s%d", i+1), "  ")
	}
	b.WriteString("  - sleep: 500ms\n  - stop: [nic-udp, veth-udp]\n")
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

// Size is the program's steps, counting each parallel branch.
func (p Program) Size() int {
	n := 0
	for _, st := range p.Steps {
		n += max(1, len(st.Branches))
	}
	return n
}
