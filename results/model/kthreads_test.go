package model

import (
	"strings"
	"testing"

	"napilab/results"
	"napilab/results/metrics"
)

func TestKernelOf(t *testing.T) {
	for rel, want := range map[string]Kernel{"7.3.4-napilab": {7, 3}, "6.1.192": {6, 1}, "6.17-rc1": {6, 17}, "x": {}, "": {}} {
		if got := KernelOf(rel); got != want {
			t.Errorf("%q: %v, want %v", rel, got, want)
		}
	}
	if !(Kernel{7, 3}).stopsKthreads() || !(Kernel{6, 17}).stopsKthreads() || (Kernel{6, 12}).stopsKthreads() || (Kernel{}).stopsKthreads() {
		t.Error("stopsKthreads")
	}
}

// threadSnaps reads eth0's napi/ kthreads every 0.2 s: alive(t) says
// whether they exist at t.
func threadSnaps(end float64, alive func(float64) bool) []Snapshot {
	s := snaps(end, func(float64) []metrics.PollLine { return nil })
	for i := range s {
		s[i].Threads = []string{"napi/vrx-9 (pid 80)"}
		if alive(s[i].From) {
			s[i].Threads = append(s[i].Threads, "napi/eth0-10 (pid 81)", "napi/eth0-11 (pid 82)")
		}
	}
	return s
}

func TestSoftirqNoKthread(t *testing.T) {
	knobs := []results.Knob{threaded(0.1, 0.12, "1"), threaded(1.0, 1.05, "0")}
	for _, tc := range []struct {
		name   string
		kernel Kernel
		until  float64 // the kthreads exist until then
		judged bool
		broken bool
	}{
		{"7.3 stops them", Kernel{7, 3}, 1.05, true, false},
		{"7.3 keeps them", Kernel{7, 3}, 9, true, true},
		{"6.1 keeps them, as it should", Kernel{6, 1}, 9, false, false},
		{"unknown release: not judged", Kernel{}, 9, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := threadSnaps(3, func(x float64) bool { return x > 0.12 && x < tc.until })
			var o *Outcome
			for _, out := range Check(Record{Kernel: tc.kernel, Knobs: knobs, Snaps: s}, rules) {
				if out.Rule.Name == "softirq-no-kthread" {
					o = &out
				}
			}
			if (o != nil) != tc.judged {
				t.Fatalf("judged %v, want %v", o != nil, tc.judged)
			}
			if o == nil {
				return
			}
			if (len(o.Broken) > 0) != tc.broken || o.NAPIs != 1 || o.Judged == 0 {
				t.Fatalf("%+v", o)
			}
			a := o.Assert()
			if tc.broken && (!strings.HasPrefix(a.Detail, "eth0: 2 napi/ kthreads (napi/eth0-10 (pid 81), napi/eth0-11 (pid 82))") ||
				!strings.Contains(a.Detail, `after step "flip" (line 7) set threaded=0`)) {
				t.Errorf("detail %q", a.Detail)
			}
		})
	}
}

func TestSoftirqNoKthreadNeedsTheList(t *testing.T) {
	// Runs recorded before the thread list, or a list that failed: not judged.
	knobs := []results.Knob{threaded(0.1, 0.12, "0")}
	s := snaps(2, func(float64) []metrics.PollLine { return nil })
	for _, o := range Check(Record{Kernel: Kernel{7, 3}, Knobs: knobs, Snaps: s}, rules) {
		if o.Rule.Name == "softirq-no-kthread" {
			t.Fatalf("judged without a thread list: %+v", o)
		}
	}
	// One queue's mode leaves the device's unknown.
	q := 0
	k := threaded(0.1, 0.12, "disabled")
	k.Queue = &q
	for _, o := range Check(Record{Kernel: Kernel{7, 3}, Knobs: []results.Knob{k}, Snaps: threadSnaps(2, func(float64) bool { return true })}, rules) {
		if o.Rule.Name == "softirq-no-kthread" {
			t.Fatalf("judged after a per-queue change: %+v", o)
		}
	}
}
