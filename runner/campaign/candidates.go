package campaign

import (
	"io"

	"napilab/kernels"
	"napilab/runner"
)

// candidates are what a bisect cuts: the prefixes of a series or the
// commits of a range. Candidate 0 is the good end, count() the bad one.
type candidates interface {
	// count is the number of candidates after the good end.
	count() int
	// label names candidate k in the log: "patches 1..k", "commit 1a2b3c4d5e6f (k/n)".
	label(k int) string
	// print says where the first bad candidate is.
	print(w io.Writer, res runner.BisectResult)
}

// buildStep builds candidate k and returns its spec (as flavoured) and
// kernel; nil ones and no error when it cannot be tested (a skip).
type buildStep func(k int) (*kernels.Spec, *kernels.Artifact, error)
