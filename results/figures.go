package results

import "strings"

// PollSeries is one NAPI's polls per second in one context over the timeline.
type PollSeries struct {
	// NAPI is "<dev>/<napi>", e.g. eth0/rx-0.
	NAPI string `json:"napi"`
	// Context is softirq, ksoftirqd, kthread or busypoll (softirq here
	// excludes ksoftirqd, so the contexts add up to all polls).
	Context string `json:"context"`
	// T are the ends of the sampling intervals, seconds since the timeline began.
	T []float64 `json:"t"`
	// Rate is polls per second over each interval.
	Rate []float64 `json:"rate"`
	// Packets is packets per second returned by those polls.
	Packets []float64 `json:"packets"`
}

// PollsRecorded is the figure of every run whose snapshots said who polled:
// all polls over the timeline, every device and context (0 included).
const PollsRecorded = "napi.polls.any.any.any"

// PollFigure says whether a figure counts who polled (napi.polls.* or
// napi.packets.*). A run keeps those only where polls happened.
func PollFigure(name string) bool {
	return strings.HasPrefix(name, "napi.polls.") || strings.HasPrefix(name, "napi.packets.")
}

// FigureValue returns a run's value of a figure. A who-polled figure the run
// lacks is 0 when the run recorded who polled at all (PollsRecorded): it saw
// no polls of that NAPI in that context.
func (r *Result) FigureValue(name string) (float64, bool) {
	if v, ok := r.Figures[name]; ok {
		return v, true
	}
	if _, rec := r.Figures[PollsRecorded]; rec && PollFigure(name) {
		return 0, true
	}
	return 0, false
}
