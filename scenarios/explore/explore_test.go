package explore

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"napilab/scenarios"
)

func init() { scenarios.ShippedDir = ".." }

// TestGenerateValid: every generated program parses and lints on every
// base release, and leaves out the knobs its release lacks.
func TestGenerateValid(t *testing.T) {
	n := 3400 // 10,200 programs over the three releases
	if testing.Short() {
		n = 300
	}
	for _, rel := range []string{"6.1", "6.12", "7.3"} {
		for seed := range uint64(n) {
			p := Generate(seed, Options{Release: rel})
			y := p.YAML(fmt.Sprintf("explore-%d", seed), "generated")
			s, err := scenarios.Parse("/tmp/explore.yaml", y, nil)
			if err != nil {
				t.Fatalf("release %s seed %d: %v\n%s", rel, seed, err, y)
			}
			for _, st := range s.Timeline[1 : len(s.Timeline)-2] {
				if st.Sleep == 0 && len(st.Parallel) == 0 && len(st.Tolerate) != 7 {
					t.Fatalf("seed %d: step %s tolerates %q, want the 7 refusals", seed, st.Name, st.Tolerate)
				}
			}
			// The witness sends throughout, on devices no step names.
			if l := s.Loads["witness-udp"]; l == nil || l.SinkNetns != "wit" || !strings.Contains(fmt.Sprint(s.Timeline[0].Start), "witness-udp") {
				t.Fatalf("seed %d: no witness load started with the others:\n%s", seed, y)
			}
			if tl := y[bytes.Index(y, []byte("\ntimeline:")):]; bytes.Contains(tl, []byte("wrx")) || bytes.Contains(tl, []byte("wtx")) || bytes.Contains(tl, []byte("netns: w")) {
				t.Fatalf("seed %d: a step names the witness's devices:\n%s", seed, y)
			}
			if rel == "6.1" && bytes.Contains(y, []byte("napi: ")) {
				t.Fatalf("seed %d: a napi-set step on 6.1:\n%s", seed, y)
			}
			if napi := bytes.Contains(y, []byte("napi: ")); napi != (s.Unsupported("6.12") != "") {
				t.Fatalf("seed %d: napi-set steps %v, but on 6.12: %q", seed, napi, s.Unsupported("6.12"))
			}
		}
	}
}

// TestGenerateDeterministic: a seed gives one program; seeds differ.
func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(42, Options{}).YAML("x", ""), Generate(42, Options{}).YAML("x", "")
	if !bytes.Equal(a, b) {
		t.Fatalf("seed 42 gave two programs:\n%s\n%s", a, b)
	}
	if bytes.Equal(a, Generate(43, Options{}).YAML("x", "")) {
		t.Error("seeds 42 and 43 gave the same program")
	}
}

// TestMinimize: a fake kernel that hangs when eth0's threaded goes to 0
// while eth0 is down (the 7.3.4 bug); the minimizer keeps exactly those
// two steps out of a long program, parallel and repeated ones included.
func TestMinimize(t *testing.T) {
	down := Step{Action: "link: {dev: eth0, state: down}"}
	off := Step{Action: `write: {path: /sys/class/net/eth0/threaded, value: "0"}`, Repeat: ", every: 50ms, count: 3"}
	noise := func(i int) Step { return Step{Action: fmt.Sprintf("sleep: %dms", 10+i)} }
	p := Program{Steps: []Step{noise(1), noise(2), down, noise(3), {Branches: []Step{noise(4), off}}, noise(5), noise(6)}}
	judged := 0
	hangs := func(c Program) (bool, error) {
		judged++
		isDown := false
		var walk func([]Step) bool
		walk = func(steps []Step) bool {
			for _, st := range steps {
				switch {
				case walk(st.Branches):
					return true
				case st.Action == down.Action:
					isDown = true
				case st.Action == off.Action && isDown:
					return true
				}
			}
			return false
		}
		return walk(c.Steps), nil
	}
	m, err := Minimize(p, hangs)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) != 2 || m.Steps[0].Action != down.Action || m.Steps[1].Action != off.Action || m.Steps[1].Repeat != "" {
		t.Errorf("minimized to %+v, want link down then threaded 0, once", m.Steps)
	}
	if judged > 40 {
		t.Errorf("%d judgements for 8 steps", judged)
	}
	if !strings.Contains(string(m.YAML("min", "")), "state: down") {
		t.Error("the reproducer's YAML lost the link step")
	}
}

// TestMinimizeKeepsAFailing: a judge that fails whatever is left keeps
// nothing but the loads; one that fails only the whole keeps it all.
func TestMinimizeBounds(t *testing.T) {
	p := Generate(7, Options{Steps: 6})
	if m, _ := Minimize(p, func(Program) (bool, error) { return true, nil }); len(m.Steps) != 0 {
		t.Errorf("always failing: kept %d steps, want 0", len(m.Steps))
	}
	whole := string(p.YAML("w", ""))
	if m, _ := Minimize(p, func(c Program) (bool, error) { return string(c.YAML("w", "")) == whole, nil }); m.Size() != p.Size() {
		t.Errorf("failing only whole: kept %d of %d steps", m.Size(), p.Size())
	}
}

// TestNoNAPISetWhileDown: napi-set steps come only while eth0 is up and
// never in a parallel branch (a down device lists no NAPI to set).
func TestNoNAPISetWhileDown(t *testing.T) {
	if dev, state := linkOf("link: {dev: eth0, state: down}"); dev != "eth0" || state != "down" {
		t.Fatalf("linkOf read %q %q", dev, state)
	}
	for seed := range uint64(3000) {
		checkRules(t, Generate(seed, Options{Release: "7.3"}))
	}
}

// checkRules fails t when p breaks a rule of the generator: a napi-set step
// in a branch or while eth0 is down, an inject step without the probe.
func checkRules(t *testing.T, p Program) {
	t.Helper()
	isDown := false
	for _, st := range p.Steps {
		for _, br := range st.Branches {
			if strings.HasPrefix(br.Action, "napi:") {
				t.Fatalf("seed %d: napi-set in a parallel branch", p.Seed)
			}
			if dev, state := linkOf(br.Action); dev == "eth0" && state == "down" {
				isDown = true
			}
		}
		if strings.HasPrefix(st.Action, "napi:") && isDown {
			t.Fatalf("seed %d: napi-set while eth0 is down", p.Seed)
		}
		if strings.HasPrefix(st.Action, "inject:") && p.Delay == nil {
			t.Fatalf("seed %d: an inject step without the delay probe", p.Seed)
		}
		if dev, state := linkOf(st.Action); dev == "eth0" {
			isDown = state == "down"
		}
	}
}
