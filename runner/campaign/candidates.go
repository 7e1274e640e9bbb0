package campaign

import (
	"io"

	"napilab/kernels"
	"napilab/runner"
)

// Candidates are what a bisect cuts: the prefixes of a series or the
// commits of a range. Candidate 0 is the good end, Count() the bad one.
type Candidates interface {
	// Count is the number of candidates after the good end.
	Count() int
	// Label names candidate k in the log: "patches 1..k", "commit 1a2b3c4d5e6f (k/n)".
	Label(k int) string
	// Print says where the first bad candidate is.
	Print(w io.Writer, res runner.BisectResult)
}

// BuildStep builds candidate k and returns its spec (as flavoured) and
// kernel; nil ones and no error when it cannot be tested (a skip).
type BuildStep func(k int) (*kernels.Spec, *kernels.Artifact, error)
