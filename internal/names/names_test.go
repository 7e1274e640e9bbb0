package names

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, n := range []string{"stock-6.1", "threaded-toggle-under-load", "a.b_c", "x"} {
		if err := Check(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"", "../../../../tmp/x", "a/b", ".hidden", "-x", "a b", strings.Repeat("x", MaxLen+1)} {
		if Check(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
}
