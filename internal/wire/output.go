package wire

import (
	"fmt"
	"math"
)

// OutputMax bounds each stream of an ExecResult: a longer stream keeps its
// first and last OutputMax/2 bytes around a CutLine. Kselftest logs share
// the bound, hence its size.
const OutputMax = 256 << 10

// CutLine is the line put where n bytes of output were cut.
func CutLine(n int) string {
	return fmt.Sprintf("\n[napilab: %d bytes of output dropped]\n", n)
}

// cutRoom is the longest CutLine: a stream the agent bounded is at most
// OutputMax plus one.
var cutRoom = len(CutLine(math.MaxInt))

// Clip bounds a stream received from the guest as the agent bounds it, so a
// buggy or hostile guest cannot make the host keep more; a stream the agent
// already bounded comes back unchanged.
func Clip(s string) string { return clip(s, OutputMax) }

func clip(s string, max int) string {
	if len(s) <= max+cutRoom {
		return s
	}
	half := max / 2
	return s[:half] + CutLine(len(s)-max) + s[len(s)-(max-half):]
}
