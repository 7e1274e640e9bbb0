package scenarios

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// TestActionKinds checks that each key of a step is read as its action,
// and the label a step without a name gets.
func TestActionKinds(t *testing.T) {
	cases := []struct {
		step, kind, label string
	}{
		{"write: {path: /x, values: [a, b]}", "write", "write a/b > /x"},
		{"sysctl: {name: net.core.x, value: 1}", "sysctl", "sysctl"},
		{"link: {dev: eth0, state: down}", "link", "link eth0 down"},
		{"gro: {dev: eth0}", "gro", "gro eth0"},
		{"channels: {dev: eth0, values: [1]}", "channels", "channels eth0"},
		{"xdp: {dev: eth0}", "xdp", "xdp"},
		{"qdisc: {dev: eth0, kind: mq}", "qdisc", "qdisc"},
		{"napi: {dev: eth0, threaded: enabled}", "napi", "napi eth0"},
		{"inject: {name: p}", "inject", "inject"},
		{"rps: {dev: eth0, cpus: ['1']}", "rps", "rps"},
		{"xps: {dev: eth0, cpus: ['1']}", "xps", "xps"},
		{"irq: {match: virtio, cpus: '1'}", "irq", "irq"},
		{"sched: {task: napi/, policy: fifo}", "sched", "sched napi/"},
		{"exec: {argv: [true]}", "exec", "exec"},
		{"kselftest: net:veth.sh", "kselftest", "kselftest"},
		{"start: [a, b]", "start", "start a, b"},
		{"stop: a", "stop", "stop a"},
		{"sleep: 2s", "sleep", "sleep 2s"},
		{"wait: {path: /x, equals: '1'}", "wait", "wait"},
		{"parallel: [{sleep: 1s}]", "parallel", "parallel"},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			var st Step
			if err := yaml.Unmarshal([]byte(tc.step), &st); err != nil {
				t.Fatal(err)
			}
			if got := st.Action(); got != tc.kind {
				t.Errorf("%s: action %q, want %q", tc.step, got, tc.kind)
			}
			if got := st.Label(); got != tc.label {
				t.Errorf("%s: label %q, want %q", tc.step, got, tc.label)
			}
			st.Name = "named"
			if got := st.Label(); got != "named" {
				t.Errorf("%s with a name: label %q, want the name", tc.step, got)
			}
		})
		seen[tc.kind] = true
	}
	for _, k := range Actions {
		if !seen[k] {
			t.Errorf("action %s has no case", k)
		}
	}
}
