package runner

import (
	"context"
	"testing"

	"napilab/results"
	"napilab/scenarios"
)

// inProcessScenario has a veth pair from the agent's root namespace into
// netns a and a UDP flood over it; steps is its timeline, asserts its
// asserts: section.
func inProcessScenario(t testing.TB, steps, asserts string) *scenarios.Scenario {
	t.Helper()
	src := `name: in-process
defaults: {deadline: 2s}
topology:
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, static_neigh: true, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
loads:
  flood: {kind: udp, from: {netns: a}, to: {address: 10.1.0.1, port: 9000}, rate: 5000}
timeline:
` + steps + "asserts:\n  - no-splat: {}\n" + asserts
	s, err := scenarios.Parse("in-process.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runInProcess runs s end to end against an in-process guest scripted with ops.
func runInProcess(t *testing.T, s *scenarios.Scenario, ops map[string]behaviour) *results.Result {
	t.Helper()
	cfg := Config{Scenario: s, OutDir: t.TempDir(), Logf: t.Logf, NoPolls: true, newGuest: inProcessGuest(t, ops, nil)}
	res := Run(context.Background(), cfg)
	t.Logf("%s %q", res.Verdict, res.Reasons)
	return res
}

func TestSmoke(t *testing.T) {
	s := inProcessScenario(t, `  - {name: mtu, write: {path: /sys/class/net/vrx/mtu, value: "1400"}}
  - start: [flood]
  - {name: flooding, sleep: 300ms}
  - stop: [flood]
`, `  - name: datagrams arrive while flooding
    during: {step: flooding}
    grows: {metric: snmp.Udp.InDatagrams, min: 10}
`)
	res := runInProcess(t, s, nil)
	t.Logf("%+v", res.Asserts)
	t.Logf("%+v", res.Steps)
}
