package runner

import (
	"slices"
	"strings"
	"testing"

	"napilab/kernels"
	"napilab/runner/vm"
	"napilab/scenarios"
)

// TestCmdlineOrder: the spec's and the scenario's words come after the
// boot tuning, so that theirs win (the kernel takes the last loglevel=).
func TestCmdlineOrder(t *testing.T) {
	r := &run{cfg: Config{Cmdline: []string{"loglevel=8"}},
		s: &scenarios.Scenario{Machine: scenarios.Machine{Cmdline: []string{"lpj=1"}}}}
	kc := kernels.BuildConfig{"CONFIG_HZ": "250"}
	words := r.cmdline(kc)
	for _, tc := range []struct{ first, then string }{
		{"console=ttyS0", "loglevel=6"},
		{"loglevel=6", "loglevel=8"},
		{"pty.legacy_count=0", "lpj=1"},
	} {
		i, j := slices.Index(words, tc.first), slices.Index(words, tc.then)
		if i < 0 || j < 0 || i > j {
			t.Errorf("%s should come before %s in %q", tc.first, tc.then, words)
		}
	}
	for _, w := range vm.BootTuning(kc) {
		if !slices.Contains(words, w) {
			t.Errorf("no %s (the boot tuning for HZ=250) in %q", w, strings.Join(words, " "))
		}
	}
}
