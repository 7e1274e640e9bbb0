package campaign

import (
	"bytes"
	"napilab/patches"
	"napilab/runner"
	"testing"
)

// TestPrintBisect: a range names every patch it may be and the skipped
// candidates; an exact answer names one patch.
func TestPrintBisect(t *testing.T) {
	s := &patches.Series{}
	for _, subj := range []string{"one", "two", "three", "four"} {
		s.Patches = append(s.Patches, patches.Patch{Subject: subj, Author: "A <a@x>"})
	}
	for _, tc := range []struct {
		res  runner.BisectResult
		want string
	}{
		{runner.BisectResult{First: 3, Last: 3}, "first bad patch: 3/4 \"three\" by A <a@x>\n"},
		{runner.BisectResult{First: 2, Last: 3, Skipped: []int{2}},
			"first bad patch: one of 2..3 of 4 (the prefixes between could not be tested):\n  2/4 \"two\" by A <a@x>\n  3/4 \"three\" by A <a@x>\n" +
				"skipped (did not build or boot): patches 1..2\n"},
	} {
		var b bytes.Buffer
		printBisect(&b, s, tc.res)
		if b.String() != tc.want {
			t.Errorf("printBisect(%+v) =\n%s\nwant\n%s", tc.res, b.String(), tc.want)
		}
	}
}
