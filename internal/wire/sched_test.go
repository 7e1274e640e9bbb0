package wire

import (
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []int // nil: an error
	}{
		{"1", []int{1}},
		{"0-3", []int{0, 1, 2, 3}},
		{"0,2-3", []int{0, 2, 3}},
		{"5,1", []int{5, 1}},
		{"", nil},
		{" ", nil},
		{"1-", nil},
		{"-1", nil},
		{"3-1", nil},
		{"0,,1", nil},
		{"a", nil},
		{"0x1", nil},
	} {
		got, err := ParseCPUList(tc.list)
		if (err != nil) != (tc.want == nil) || !slices.Equal(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tc.list, got, err, tc.want)
		}
	}
}

func TestPolicyClasses(t *testing.T) {
	for _, tc := range []struct {
		policy         string
		realTime, nice bool
	}{
		{"", false, true}, {PolicyOther, false, true}, {PolicyBatch, false, true},
		{PolicyIdle, false, false}, {PolicyFIFO, true, false}, {PolicyRR, true, false},
	} {
		if RealTime(tc.policy) != tc.realTime || TakesNice(tc.policy) != tc.nice {
			t.Errorf("policy %q: real-time %v takes nice %v, want %v %v", tc.policy, RealTime(tc.policy), TakesNice(tc.policy), tc.realTime, tc.nice)
		}
	}
}
