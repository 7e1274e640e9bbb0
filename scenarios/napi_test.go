package scenarios

import (
	"strings"
	"testing"
)

// napiBase declares a two-queue NIC and a veth whose peer sits in netns a;
// the step under test is line 8.
const napiBase = `name: t
topology:
  nics: [{name: eth0, queues: 2, address: 10.0.0.2/24, host: 10.0.0.1/24}]
  netns: [a]
  veths: [{name: vrx, address: 10.1.0.1/24, peer: {name: vtx, netns: a, address: 10.1.0.2/24}}]
timeline:
  - sleep: 1s
`

func TestNAPIStep(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		values     []string // Value(0), Value(1), ...
		explain    string
	}{
		{"busy-poll on every NAPI", "  - napi: {dev: eth0, threaded: busy-poll}\n", []string{"busy-poll", "busy-poll"},
			"napi-set every NAPI of eth0: threaded busy-poll"},
		{"one queue, every setting", "  - napi: {dev: eth0, queue: 1, threaded: enabled, defer_hard_irqs: 2, gro_flush_timeout: 200us, irq_suspend_timeout: 20ms}\n",
			[]string{"enabled"},
			"napi-set the NAPI of eth0 rx queue 1: threaded enabled, defer_hard_irqs 2, gro_flush_timeout 200µs, irq_suspend_timeout 20ms"},
		{"a cycle", "  - {napi: {dev: eth0, threaded: [busy-poll, disabled]}, every: 500ms, count: 4}\n",
			[]string{"busy-poll", "disabled", "busy-poll"},
			"napi-set every NAPI of eth0: threaded busy-poll, then disabled every 500ms, 4 times"},
		{"settings only, in a netns", "  - napi: {dev: vtx, netns: a, gro_flush_timeout: 0s, defer_hard_irqs: 0}\n", []string{""},
			"napi-set every NAPI of vtx in netns a: defer_hard_irqs 0, gro_flush_timeout 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("x.yaml", []byte(napiBase+tc.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			st := s.Timeline[1]
			if got := st.Action(); got != "napi" {
				t.Errorf("action %q, want napi", got)
			}
			for i, want := range tc.values {
				if got := st.Value(i); got != want {
					t.Errorf("Value(%d) = %q, want %q", i, got, want)
				}
			}
			var b strings.Builder
			explainStep(&b, st, 0, "")
			if !strings.Contains(b.String(), tc.explain) {
				t.Errorf("explain %q, want it to contain %q", b.String(), tc.explain)
			}
		})
	}
}

func TestNAPIStepErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"no setting", "  - napi: {dev: eth0}\n",
			"x.yaml:8:5: napi on eth0 needs at least one setting: threaded, defer_hard_irqs, gro_flush_timeout or irq_suspend_timeout"},
		{"only a queue", "  - napi: {dev: eth0, queue: 0}\n", "x.yaml:8:5: napi on eth0 needs at least one setting"},
		{"unknown mode", "  - napi: {dev: eth0, threaded: busy}\n",
			`x.yaml:8:5: napi threaded "busy": want disabled, enabled or busy-poll (or a list of them to cycle)`},
		{"sysfs style mode", "  - {napi: {dev: eth0, threaded: [\"1\", disabled]}, every: 1s, count: 2}\n",
			`x.yaml:8:5: napi threaded "1": want disabled, enabled or busy-poll`},
		{"no dev", "  - napi: {threaded: enabled}\n", "x.yaml:8:5: missing dev"},
		{"device in another netns", "  - napi: {dev: vtx, threaded: enabled}\n",
			`x.yaml:8:5: no device "vtx" in the root namespace (declare it under topology)`},
		{"queue past the NIC's", "  - napi: {dev: eth0, queue: 2, threaded: enabled}\n",
			"x.yaml:8:5: napi queue 2: want an RX queue of eth0, 0-1"},
		{"negative queue", "  - napi: {dev: eth0, queue: -1, threaded: enabled}\n",
			"x.yaml:8:5: napi queue -1: want an RX queue of eth0, 0-1"},
		{"defer_hard_irqs over S32_MAX", "  - napi: {dev: eth0, defer_hard_irqs: 2147483648}\n",
			"x.yaml:8:5: napi defer_hard_irqs 2147483648: want 0-2147483647"},
		{"negative timeout", "  - napi: {dev: eth0, gro_flush_timeout: -1ms}\n",
			`x.yaml:8:42: negative duration "-1ms"`},
		{"timeout without a unit", "  - napi: {dev: eth0, irq_suspend_timeout: 200}\n", "x.yaml:8:"},
		{"misspelt key", "  - napi: {dev: eth0, threded: enabled}\n", `x.yaml:8:23: unknown field "threded" in napi (did you mean "threaded"?)`},
		{"two actions", "  - {napi: {dev: eth0, threaded: enabled}, sleep: 1s}\n",
			"x.yaml:8:5: a step needs exactly one action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(napiBase+tc.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestNAPISource(t *testing.T) {
	const base = napiBase + "  - napi: {dev: eth0, threaded: enabled}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"sampler", "samplers: [{source: napi, every: 100ms}, {source: \"napi:a\", every: 100ms}]\n", ""},
		{"metrics", "asserts:\n  - delta: {metric: napi.eth0.rx-0.threaded, min: 1}\n  - grows: {metric: napi.a/vtx.rx-0.pid}\n", ""},
		{"sampler in an undeclared netns", "samplers: [{source: \"napi:b\", every: 100ms}]\n",
			`x.yaml:9:12: netns "b" is not declared under topology.netns`},
		{"metric in an undeclared netns", "asserts:\n  - delta: {metric: napi.b/vtx.rx-0.pid, max: 0}\n",
			`x.yaml:10:13: netns "b" is not declared under topology.netns`},
		{"unknown field", "asserts:\n  - delta: {metric: napi.eth0.rx-0.weight, max: 0}\n",
			`x.yaml:10:13: unknown napi field "weight"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(base+tc.yaml), nil)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
