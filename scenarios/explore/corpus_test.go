package explore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"napilab/scenarios"
)

// TestMutateValid: every mutation parses and lints on every base, keeps
// the generator's rules and stays within twice the steps.
func TestMutateValid(t *testing.T) {
	n := uint64(1000)
	if testing.Short() {
		n = 200
	}
	for _, rel := range []string{"6.1", "6.12", "7.3"} {
		o := Options{Release: rel, Steps: 6}
		for seed := range uint64(n) {
			m := Mutate(Generate(seed, o), Generate(seed+n, o), seed+2*n, o)
			if m.Parent != seed || m.Seed != seed+2*n {
				t.Fatalf("mutation of %d: seed %d parent %d", seed, m.Seed, m.Parent)
			}
			y := m.YAML(fmt.Sprintf("explore-%d", seed), "mutated")
			if _, err := scenarios.Parse("/tmp/explore.yaml", y, nil); err != nil {
				t.Fatalf("release %s, mutation %d: %v\n%s", rel, seed, err, y)
			}
			checkRules(t, m)
			if len(m.Steps) > 12 {
				t.Fatalf("mutation %d has %d entries, want at most 12", seed, len(m.Steps))
			}
		}
	}
}

// TestMutateChanges: a mutation differs from its parent (most of the time:
// a swap of two equal steps is none) and every way of mutating is taken.
func TestMutateChanges(t *testing.T) {
	same, delays := 0, 0
	for seed := range uint64(500) {
		p := Generate(seed, Options{})
		m := Mutate(p, Generate(seed+1000, Options{}), seed, Options{})
		if bytes.Equal(p.YAML("x", ""), m.YAML("x", "")) {
			same++
		}
		if (p.Delay == nil) != (m.Delay == nil) {
			delays++
		}
	}
	if same > 25 {
		t.Errorf("%d of 500 mutations equal their parent", same)
	}
	if delays == 0 {
		t.Error("no mutation added or dropped the delay probe")
	}
}

// TestCorpusNext: without a corpus every program is drawn afresh; with one,
// about a quarter are mutations of its programs; a seed and corpus give one
// program.
func TestCorpusNext(t *testing.T) {
	var c Corpus
	if p := c.Next(5, Options{}); p.Parent != 0 || !bytes.Equal(p.YAML("x", ""), Generate(5, Options{}).YAML("x", "")) {
		t.Fatalf("empty corpus: seed 5 gave %+v, want Generate(5)", p)
	}
	c.Add(Generate(1, Options{}), []string{"a"})
	c.Add(Generate(2, Options{}), []string{"b"})
	mutated := 0
	for seed := uint64(100); seed < 300; seed++ {
		p := c.Next(seed, Options{})
		if p.Parent != 0 {
			mutated++
			if p.Parent != 1 && p.Parent != 2 {
				t.Fatalf("seed %d: parent %d is not in the corpus", seed, p.Parent)
			}
		}
		if !bytes.Equal(p.YAML("x", ""), c.Next(seed, Options{}).YAML("x", "")) {
			t.Fatalf("seed %d gave two programs", seed)
		}
	}
	if mutated < 30 || mutated > 70 {
		t.Errorf("%d of 200 programs mutated, want about a quarter", mutated)
	}
}

// TestCorpusAdd: a program joins when it reached a feature not seen
// before, and only then.
func TestCorpusAdd(t *testing.T) {
	var c Corpus
	if n := c.Add(Program{Seed: 1}, []string{"a", "b"}); n != 2 || len(c.Programs) != 1 {
		t.Fatalf("first: %d new, %d programs", n, len(c.Programs))
	}
	if n := c.Add(Program{Seed: 2}, []string{"b", "a"}); n != 0 || len(c.Programs) != 1 {
		t.Fatalf("nothing new: %d new, %d programs", n, len(c.Programs))
	}
	if n := c.Add(Program{Seed: 3}, []string{"a", "c"}); n != 1 || len(c.Programs) != 2 || c.Features() != 3 {
		t.Fatalf("one new: %d new, %d programs, %d features", n, len(c.Programs), c.Features())
	}
}

// TestFeatures: steps taken or refused, the kind a refused step came
// after (branches in order), the delay's place and calls in powers of two.
func TestFeatures(t *testing.T) {
	down := Step{Kind: "link", Action: "link: {dev: eth0, state: down}"}
	off := Step{Kind: "threaded", Action: `write: {path: /sys/class/net/eth0/threaded, value: "0"}`}
	nap := Step{Kind: "sleep", Action: "sleep: 10ms"}
	p := Program{Steps: []Step{down, {Branches: []Step{off, nap}}}, Delay: &Delay{At: "napi_disable"}}
	fs := Features(p, Reached{Refused: map[string]bool{"s2.1": true}, Calls: map[string]uint64{"napi_disable": 5, "napi_enable": 0}})
	for _, want := range []string{
		down.Action + " taken",
		off.Action + " refused",
		"link > threaded refused",
		"delay at napi_disable",
		"napi_disable: 2^2 calls",
	} {
		if !slices.Contains(fs, want) {
			t.Errorf("no feature %q in\n%s", want, strings.Join(fs, "\n"))
		}
	}
	for _, f := range fs {
		if strings.HasPrefix(f, "napi_enable") {
			t.Errorf("a function never called is a feature: %q", f)
		}
		if strings.Contains(f, " > ") && !strings.HasSuffix(f, "refused") {
			t.Errorf("an order the kernel took is a feature (every program would bring one): %q", f)
		}
	}
}

// TestMinimizeDelay: the delay probe goes when the failure does not need
// it, with its inject steps, and stays when it does.
func TestMinimizeDelay(t *testing.T) {
	arm := Step{Kind: "inject", Action: "inject: {name: delay, armed: true}"}
	down := Step{Kind: "link", Action: "link: {dev: eth0, state: down}"}
	p := Program{Steps: []Step{arm, down}, Delay: &Delay{At: "napi_disable", Delay: "100us", Probability: "1", Count: 10}}
	hasDown := func(c Program) (bool, error) {
		return slices.ContainsFunc(c.Steps, func(s Step) bool { return s.Action == down.Action }), nil
	}
	if m, _ := Minimize(p, hasDown); m.Delay != nil || len(m.Steps) != 1 {
		t.Errorf("delay not needed: kept %+v", m)
	}
	needsDelay := func(c Program) (bool, error) { ok, _ := hasDown(c); return ok && c.Delay != nil, nil }
	if m, _ := Minimize(p, needsDelay); m.Delay == nil || len(m.Steps) != 1 {
		t.Errorf("delay needed: kept %+v", m)
	}
}

// TestMinimizeBusyPoll: a busy-polling load goes when the failure does not
// need it and stays when it does; the reproducer's YAML says which.
func TestMinimizeBusyPoll(t *testing.T) {
	down := Step{Kind: "link", Action: "link: {dev: eth0, state: down}"}
	p := Program{Steps: []Step{down}, BusyPoll: []string{"nic-udp", "veth-udp"}}
	needsNIC := func(c Program) (bool, error) { return len(c.Steps) == 1 && slices.Contains(c.BusyPoll, "nic-udp"), nil }
	m, _ := Minimize(p, needsNIC)
	if !slices.Equal(m.BusyPoll, []string{"nic-udp"}) || m.Size() != 2 {
		t.Errorf("nic-udp's busy polling needed: kept %+v", m)
	}
	if y := string(m.YAML("m", "")); !strings.Contains(y, "loads:\n  nic-udp: {busy_poll: 50}\n") || strings.Contains(y, "veth-udp: {busy") {
		t.Errorf("the reproducer does not say which load busy-polls:\n%s", y)
	}
	if m, _ := Minimize(p, func(c Program) (bool, error) { return len(c.Steps) == 1, nil }); len(m.BusyPoll) != 0 {
		t.Errorf("busy polling not needed: kept %v", m.BusyPoll)
	}
	polls := 0
	for seed := range uint64(1000) {
		if len(Generate(seed, Options{}).BusyPoll) > 0 {
			polls++
		}
	}
	if polls < 400 || polls > 600 {
		t.Errorf("%d of 1000 programs have a busy-polling load, want about half", polls)
	}
}

// TestCorpusPick: the program that alone reached a state is picked far
// more often than one whose states every run reaches.
func TestCorpusPick(t *testing.T) {
	var c Corpus
	c.Add(Program{Seed: 1}, []string{"common"})
	for range 99 {
		c.Add(Program{Seed: 9}, []string{"common"})
	}
	c.Add(Program{Seed: 2}, []string{"common", "rare"})
	r := rand.New(rand.NewPCG(1, 2))
	rare := 0
	for range 1000 {
		if c.pick(r).Seed == 2 {
			rare++
		}
	}
	if rare < 900 {
		t.Errorf("the rare state's program picked %d times in 1000", rare)
	}
}
