package scenarios

import "testing"

// TestTimingOnly: which assertion kinds a starved host can fail alone.
func TestTimingOnly(t *testing.T) {
	one := 1.0
	for _, tc := range []struct {
		name string
		a    Assert
		want bool
	}{
		{"no-splat", Assert{NoSplat: &NoSplat{}}, false},
		{"threads-while", Assert{Threads: &Threads{Prefix: "napi/"}}, false},
		{"no-stall", Assert{NoStall: &NoStall{Load: "l"}}, true},
		{"rate", Assert{Rate: &Rate{Metric: "m", Min: &one}}, true},
		{"rate max", Assert{Rate: &Rate{Metric: "m", Max: &one}}, true},
		{"latency", Assert{Latency: &Latency{Load: "rr"}}, true},
		{"grows", Assert{Grows: &Grows{Metric: "m"}}, false},
		{"delta", Assert{Delta: &Delta{Metric: "m", Min: &one}}, false},
		{"ratio", Assert{Ratio: &Ratio{Num: "a", Den: "b", Max: &one}}, false},
		{"polls", Assert{Polls: &Polls{Min: &one}}, false},
		{"grows in a window", Assert{During: &Window{}, Grows: &Grows{Metric: "m"}}, true},
		{"polls min after each flip", Assert{Each: "flip", Polls: &Polls{Min: &one}}, true},
		{"polls max in a window", Assert{During: &Window{}, Polls: &Polls{Max: &one}}, false},
		{"delta min and max in a window", Assert{During: &Window{}, Delta: &Delta{Metric: "m", Min: &one, Max: &one}}, false},
	} {
		if got := tc.a.TimingOnly(); got != tc.want {
			t.Errorf("%s: timing-only %v, want %v", tc.name, got, tc.want)
		}
	}
}
