package runner

import (
	"testing"

	"napilab/internal/wire"
	"napilab/results"
)

// TestCoverage reads the cover probes' counts from the final snapshot: a
// function sums its probes (callers of an inlined one), a refused or
// probeless one stays uncounted and keeps "not exercised" from being said,
// and counts read before the timeline ended are marked partial.
func TestCoverage(t *testing.T) {
	set := &results.Coverage{Funcs: []results.FuncCalls{
		{CoverFunc: results.CoverFunc{Func: "napi_threaded_poll", Probes: []string{"napi_threaded_poll"}}},
		{CoverFunc: results.CoverFunc{Func: "napi_schedule_rps", Probes: []string{"enqueue_to_backlog", "netif_rx_internal"}, Via: "callers"}},
	}}
	snap := func(at float64, text string) sampleRec {
		return sampleRec{Group: metricsGroup, Host: at, Data: wire.Sample{Values: map[string]string{wire.SourceCover: text}}}
	}
	tl := &timeline{samples: []sampleRec{snap(1, "napi_threaded_poll 1 0\n"), snap(9, "napi_threaded_poll 0 0\nenqueue_to_backlog 5 0\nnetif_rx_internal 2 0\n")}, final: 9}
	c := tl.coverage(set)
	if c.Partial || c.Funcs[0].Calls != 0 || c.Funcs[1].Calls != 7 || c.NotExercised() {
		t.Errorf("coverage = %+v, want napi_threaded_poll 0, napi_schedule_rps 7 (5+2), exercised", c)
	}
	tl.samples[1] = snap(9, "napi_threaded_poll 0 0\nenqueue_to_backlog 0 0\nnetif_rx_internal 0 0\n")
	if c := tl.coverage(set); !c.NotExercised() {
		t.Errorf("no calls at all: %+v, want not exercised", c)
	}
	tl.final = 0 // the final snapshot never came
	if c := tl.coverage(set); !c.Partial || c.NotExercised() {
		t.Errorf("early counts: %+v, want partial, and no claim of not exercised", c)
	}
	tl.final = 9
	set.Funcs = append(set.Funcs, results.FuncCalls{CoverFunc: results.CoverFunc{Func: "napi_thread_wait"}, Why: "inlined, and no caller of it has a symbol"})
	if c := tl.coverage(set); c.NotExercised() {
		t.Errorf("an uncounted function: %+v, want no claim of not exercised", c)
	}
	if tl.coverage(nil) != nil {
		t.Error("no cover probes: want no coverage")
	}
}
