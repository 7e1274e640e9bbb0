package campaign

import (
	"context"
	"fmt"
	"io"

	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
)

// commitCandidates are the commits of a range, the good end first.
type commitCandidates struct{ commits []kernels.Commit }

func (c commitCandidates) count() int { return len(c.commits) - 1 }

func (c commitCandidates) label(k int) string {
	return fmt.Sprintf("commit %.12s (%d/%d)", c.commits[k].ID, k, c.count())
}

func (c commitCandidates) print(w io.Writer, res runner.BisectResult) {
	if res.First == res.Last {
		cm := c.commits[res.First]
		fmt.Fprintf(w, "first bad commit: %s %s\n", cm.ID, cm.Subject)
	} else {
		fmt.Fprintf(w, "first bad commit: one of %d commits (those between could not be tested):\n", res.Last-res.First+1)
		for k := res.First; k <= res.Last; k++ {
			fmt.Fprintf(w, "  %s %s\n", c.commits[k].ID, c.commits[k].Subject)
		}
	}
	for _, k := range res.Skipped {
		fmt.Fprintf(w, "skipped (did not build or boot): %.12s %s\n", c.commits[k].ID, c.commits[k].Subject)
	}
}

// Commits bisects the commits of good..bad in the git repository at repo,
// in a bisect folder under out. specPath(rev) writes the spec of the
// repository at rev (lab's --tree spec); every step builds it (one export,
// one work dir) at its commit.
func (b *Bisector) Commits(ctx context.Context, repo, good, bad, out string, specPath func(rev string) (string, error), stdout io.Writer) error {
	commits, err := kernels.RevList(ctx, repo, good, bad)
	if err != nil {
		return err
	}
	c := commitCandidates{commits}
	if c.count() == 0 {
		return fmt.Errorf("%s..%s holds no commit: nothing to bisect", good, bad)
	}
	fmt.Fprintf(b.Log, "bisecting %d commits of %s..%s (first parents), about %d steps\n", c.count(), good, bad, steps(c.count()))
	if b.specPath, err = specPath(commits[len(commits)-1].ID); err != nil {
		return err
	}
	spec, err := kernels.LoadSpec(b.specPath)
	if err != nil {
		return err
	}
	if b.out, err = results.NewRunDir(out, "bisect-"+b.Scenario.Name+"-"+spec.Name); err != nil {
		return err
	}
	// build builds commit k; nil, nil when it cannot be tested (a skip).
	build := func(k int) (*kernels.Spec, *kernels.Artifact, error) {
		at := spec.AtCommit(commits[k].ID)
		release, err := kernels.TreeRelease(ctx, b.CacheDir, at.Base)
		if err != nil {
			return nil, nil, err
		}
		if why := b.Scenario.Unsupported(release); why != "" {
			fmt.Fprintf(b.Log, "%s: release %s, skipped: %s\n", c.label(k), release, why)
			return nil, nil, nil
		}
		a, err := b.build(ctx, c.label(k), at)
		if a == nil {
			return nil, nil, err
		}
		return at.Flavoured(b.Flavour), a, nil
	}
	return b.bisect(ctx, c, "range", build, func(k int) string { return fmt.Sprintf("c%d", k) },
		func(k int) string { return fmt.Sprintf("c%d-%.12s", k, commits[k].ID) }, stdout)
}

// steps is about how many probes a bisect of n candidates takes, ends included.
func steps(n int) int {
	s := 2
	for ; n > 1; n = (n + 1) / 2 {
		s++
	}
	return s
}
