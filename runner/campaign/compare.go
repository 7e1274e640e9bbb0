package campaign

import (
	"context"
	"os"
	"path/filepath"

	"napilab/results"
	"napilab/results/stats"
	"napilab/runner"
)

// Comparison is lab compare's run: two arms interleaved A B A B, Repeat
// runs each, in a new comparison folder under Out, and every figure
// compared (stats.Compare at Alpha, bootstrap Seed).
type Comparison struct {
	Arms   [2]runner.Arm
	Repeat int
	Out    string
	Alpha  float64
	Seed   int64
	Run    Interleaver                            // nil: runner.Interleave
	Each   func(runner.Arm, int, *results.Result) // after every run
}

// Compare runs it and writes compare.json and compare.md into its folder;
// it returns the comparison and the folder. Two arms with one label (a
// kernel against itself with other flags) are told apart by " (B)".
func (cp Comparison) Compare(ctx context.Context) (*stats.Comparison, string, error) {
	arms := cp.Arms
	if arms[0].Label == arms[1].Label {
		arms[1].Label += " (B)"
	}
	dir, err := results.NewRunDir(cp.Out, "compare-"+arms[0].Cfg.Scenario.Name)
	if err != nil {
		return nil, "", err
	}
	runs, err := cp.Run.interleave(ctx, arms[:], dir, 1, cp.Repeat, cp.Each)
	if err != nil {
		return nil, dir, err
	}
	c := stats.Compare(arms[0].Label, arms[1].Label, runner.Samples(runs), cp.Alpha, cp.Seed)
	return c, dir, writeComparison(dir, c)
}

func writeComparison(dir string, c *stats.Comparison) error {
	j, err := os.Create(filepath.Join(dir, "compare.json"))
	if err != nil {
		return err
	}
	if err := c.WriteJSON(j); err != nil {
		j.Close()
		return err
	}
	if err := j.Close(); err != nil {
		return err
	}
	m, err := os.Create(filepath.Join(dir, "compare.md"))
	if err != nil {
		return err
	}
	c.WriteMarkdown(m)
	return m.Close()
}
