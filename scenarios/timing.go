package scenarios

// TimingOnly says whether the assertion checks only how fast things
// happened on the host's clock, so that a host that starves the guest (TCG
// on a busy machine) can fail it with a sound kernel. A run that fails on
// such assertions alone runs once more (lab run); a pass on retry is
// reported as flaky, and --strict fails it.
//
// Timing-only:
//   - rate: a metric per second of wall clock;
//   - latency: request/response percentiles in microseconds;
//   - no-stall: packets in every wall-clock window of a load;
//   - a lower bound (min) over a window of the timeline (during: or each:
//     with within:): "at least N events in these T seconds".
//
// Behavioural (a failure is the kernel's, however slow the host):
//   - no-splat and threads-while: what the kernel printed, which threads
//     exist for a knob's value;
//   - grows, delta, ratio and polls over the whole timeline: counters and
//     who polled, whose bounds are totals that fewer events per second
//     still reach;
//   - an upper bound (max) anywhere, windows included: a starved host
//     makes fewer events, never forbidden ones ("softirq polls, max 0");
//     a window with both bounds counts as behavioural.
//
// A hang, a splat, a failed step or kselftest are never timing-only.
func (a *Assert) TimingOnly() bool {
	x, _ := a.kind()
	switch {
	case x == nil:
		return false
	case x.timingOnly():
		return true
	case a.During != nil || a.Each != "":
		if w, ok := x.(spanned); ok {
			min, max := w.bounds()
			return min != nil && max == nil
		}
	}
	return false
}
