package campaign

import (
	"slices"

	"napilab/runner"
	"napilab/scenarios"
)

// PerfJob is one perf scenario on one kernel under test (side B).
type PerfJob struct {
	Scenario *scenarios.Scenario
	Params   map[string]string // the parameters asked for, which name its folder
	KPath    string            // the spec of the kernel under test
	B        runner.Config     // side B's run configuration
}

// perfName names a perf scenario with its mode: "udp-flood [threaded]".
func perfName(s *scenarios.Scenario) string {
	if m := s.Mode(); m != "" {
		return s.Name + " [" + m + "]"
	}
	return s.Name
}

// modesOn says whether a perf scenario in its mode runs on a kernel whose
// spec lists modes: a mode the series is about, or every mode when it names
// none of the scenario's.
func modesOn(s *scenarios.Scenario, specModes []string) bool {
	mode := s.Mode()
	if mode == "" || len(specModes) == 0 || slices.Contains(specModes, mode) {
		return true
	}
	for _, m := range s.ModeNames() {
		if slices.Contains(specModes, m) {
			return false
		}
	}
	return true
}
