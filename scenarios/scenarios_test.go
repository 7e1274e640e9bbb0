package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestShippedScenariosParse(t *testing.T) {
	files, _ := filepath.Glob("*.yaml")
	if len(files) == 0 {
		t.Fatal("no shipped scenarios")
	}
	for _, f := range files {
		if _, err := Open(f, nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestThreadedToggle(t *testing.T) {
	s, err := Open("threaded-toggle-under-load.yaml", map[string]string{"queues": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Topology.NICs[0].Queues != 4 {
		t.Errorf("queues = %d, want the override 4", s.Topology.NICs[0].Queues)
	}
	if got := s.Timeline[2].Parallel[0].Every.D(); got != 100*time.Millisecond {
		t.Errorf("every = %v", got)
	}
	l := s.Loads["veth-udp"]
	if l.SinkNetns != "" || l.SinkAddr != "10.100.0.2" {
		t.Errorf("veth-udp sink = %q in %q", l.SinkAddr, l.SinkNetns)
	}
	if n := s.Loads["nic-udp"]; !n.From.Host || n.SinkAddr != "10.99.0.2" {
		t.Errorf("nic-udp = %+v", n)
	}
	if s.Asserts[2].Threads.Min != 4 || s.Defaults.Deadline.D() != 10*time.Second {
		t.Errorf("defaults not applied: %+v %v", s.Asserts[2].Threads, s.Defaults.Deadline)
	}
}

const base = `name: t
topology:
  nics: [{name: eth0, address: 10.0.0.2/24, host: 10.0.0.1/24}]
loads:
  l: {kind: udp, from: host, to: {nic: eth0, port: 9}}
timeline:
  - start: l
`

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", base + "  - sleep: 1s\n    evry: 1s\n", `x.yaml:9: unknown field "evry" in timeline (did you mean "every"?)`},
		{"unknown top key", "nmae: x\n" + base, `x.yaml:1: unknown field "nmae" (did you mean "name"?)`},
		{"bad duration", base + "  - sleep: 10 s\n", `x.yaml:8: bad duration "10 s"`},
		{"wrong type", base + "machine: {cpus: two}\n", "x.yaml:8: cannot unmarshal !!str `two` into int"},
		{"undefined load", base + "  - stop: nope\n", `x.yaml:8: no load "nope" under loads:`},
		{"two actions", base + "  - {sleep: 1s, stop: l}\n", "x.yaml:8: a step needs exactly one action"},
		{"unknown metric", base + "asserts:\n  - grows: {metric: softirqs.NET_RXX}\n", `x.yaml:9: unknown softirq "NET_RXX"`},
		{"undeclared netns", base + "  - write: {path: /x, value: '1', netns: ghost}\n", `x.yaml:8: netns "ghost" is not declared`},
		{"undefined param", base + "  - sleep: ${nap}\n", "x.yaml:8: undefined parameter ${nap}"},
		{"every without for", base + "  - {write: {path: /x, value: '1'}, every: 1s}\n", "x.yaml:8: every needs for: or count:"},
		{"too many cpus", base + "machine: {cpus: 64}\n", "machine.cpus 64: want 1-8"},
		{"broken yaml", base + "  - sleep: [\n", "x.yaml:8: did not find"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSeveralErrorsReported(t *testing.T) {
	_, err := Parse("x.yaml", []byte(base+"  - stop: a\n  - stop: b\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("want both undefined loads reported, got %v", err)
	}
}

func TestUndeclaredOverride(t *testing.T) {
	_, err := Parse("x.yaml", []byte(base), map[string]string{"queues": "2"})
	if err == nil || !strings.Contains(err.Error(), "parameter queues is not declared") {
		t.Errorf("error = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	data, _ := os.ReadFile("threaded-toggle-under-load.yaml")
	f.Add(data)
	f.Add([]byte(base))
	f.Fuzz(func(t *testing.T, b []byte) {
		Parse("fuzz.yaml", b, nil)
	})
}
