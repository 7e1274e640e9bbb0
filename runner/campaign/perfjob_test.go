package campaign

import (
	"testing"

	"napilab/scenarios"
)

func TestModesOn(t *testing.T) {
	s, err := scenarios.Open("../../scenarios/perf/udp-flood.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	th, _, err := s.ForMode("threaded", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s     *scenarios.Scenario
		modes []string
		want  bool
	}{
		{s, nil, true},                   // a spec without modes: every mode
		{s, []string{"threaded"}, false}, // softirq is not what the series is about
		{th, []string{"threaded"}, true}, // threaded is
		{s, []string{"busy-poll"}, true}, // the series names none of the scenario's modes: all run
		{th, []string{"softirq", "threaded"}, true},
	} {
		if got := modesOn(tc.s, tc.modes); got != tc.want {
			t.Errorf("mode %s on a series about %v: %v, want %v", tc.s.Mode(), tc.modes, got, tc.want)
		}
	}
}
