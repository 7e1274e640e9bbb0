package results

import "testing"

func TestVerdictOrder(t *testing.T) {
	order := []Verdict{Pass, Inconclusive, Fail, Error}
	for i, v := range order {
		for j, w := range order {
			if got := v.Worse(w); got != (i > j) {
				t.Errorf("%s.Worse(%s) = %v", v, w, got)
			}
		}
	}
	if Inconclusive.ExitCode() != 3 || Fail.ExitCode() != 1 || Error.ExitCode() != 2 || Pass.ExitCode() != 0 {
		t.Error("exit codes changed")
	}
}

func TestTitlePrefersMeasuredFailures(t *testing.T) {
	r := &Result{Verdict: Fail, Asserts: []Assert{
		{Name: "kthreads while threaded", Unmeasured: true},
		{Name: "no stall of nic-udp"},
	}}
	if got := r.Title(); got != "assertion failed: no stall of nic-udp" {
		t.Errorf("Title = %q, want the measured failure", got)
	}
	r.Asserts = r.Asserts[:1]
	if got := r.Title(); got != "assertion failed: kthreads while threaded" {
		t.Errorf("Title = %q, want the unmeasured one when it is all there is", got)
	}
}

func TestFigureValue(t *testing.T) {
	recorded := &Result{Figures: map[string]float64{PollsRecorded: 10, "napi.polls.eth0.any.kthread": 10}}
	blind := &Result{Figures: map[string]float64{"softirqs.NET_RX": 5}}
	for _, tc := range []struct {
		name   string
		r      *Result
		figure string
		want   float64
		ok     bool
	}{
		{"kept", recorded, "napi.polls.eth0.any.kthread", 10, true},
		{"no polls in that context", recorded, "napi.polls.eth0.any.softirq", 0, true},
		{"no packets either", recorded, "napi.packets.vrx.rx-0.ksoftirqd", 0, true},
		{"other figures stay missing", recorded, "softirqs.NET_RX", 0, false},
		{"who polled not recorded", blind, "napi.polls.eth0.any.softirq", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, ok := tc.r.FigureValue(tc.figure); v != tc.want || ok != tc.ok {
				t.Errorf("FigureValue(%s) = %v, %v; want %v, %v", tc.figure, v, ok, tc.want, tc.ok)
			}
		})
	}
}
