package wire

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	const max = 10
	limit := max + cutRoom // the longest stream a real agent sends
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "hello", "hello"},
		{"exactly at the limit", strings.Repeat("x", limit), strings.Repeat("x", limit)},
		{"bounded by the agent", "abcde" + CutLine(16) + "vwxyz", "abcde" + CutLine(16) + "vwxyz"},
		{"one over", "abcde" + strings.Repeat("x", limit-10+1) + "vwxyz", "abcde" + CutLine(limit+1-max) + "vwxyz"},
		{"far over", "abcde" + strings.Repeat("x", 1<<20) + "vwxyz", "abcde" + CutLine(1<<20) + "vwxyz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clip(tc.in, max)
			if got != tc.want {
				t.Errorf("clip(%d bytes) = %q, want %q", len(tc.in), got, tc.want)
			}
			if again := clip(got, max); again != got {
				t.Errorf("clip is not idempotent: %q, then %q", got, again)
			}
		})
	}
}

func TestClipBound(t *testing.T) {
	got := Clip(strings.Repeat("x", 10*OutputMax))
	if len(got) > OutputMax+cutRoom || !strings.Contains(got, CutLine(9*OutputMax)) {
		t.Errorf("Clip kept %d bytes, want at most %d with a cut line for %d", len(got), OutputMax+cutRoom, 9*OutputMax)
	}
}
