package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/runner/campaign"
)

// commitCandidates are the commits of a range, the good end first.
type commitCandidates struct{ commits []kernels.Commit }

func (c commitCandidates) Count() int { return len(c.commits) - 1 }

func (c commitCandidates) Label(k int) string {
	return fmt.Sprintf("commit %.12s (%d/%d)", c.commits[k].ID, k, c.Count())
}

func (c commitCandidates) Print(w io.Writer, res runner.BisectResult) {
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

// bisectCommits bisects the commits of --good..--bad in --tree's repository.
// Every step builds the same spec (one export, one work dir) at its commit.
func bisectCommits(cmd *cobra.Command, b *bisector) error {
	ctx, o := cmd.Context(), b.o
	commits, err := kernels.RevList(ctx, o.tree.dir, o.good, o.bad)
	if err != nil {
		return err
	}
	c := commitCandidates{commits}
	if c.Count() == 0 {
		return fmt.Errorf("%s..%s holds no commit: nothing to bisect", o.good, o.bad)
	}
	fmt.Fprintf(b.stderr, "bisecting %d commits of %s..%s (first parents), about %d steps\n", c.Count(), o.good, o.bad, steps(c.Count()))
	tree := o.tree
	tree.rev = commits[len(commits)-1].ID
	if tree.name == "" {
		tree.name = kernels.TreeSpecName(o.tree.dir, "") + "-bisect"
	}
	if b.specPath, err = tree.specPath(ctx, b.g); err != nil {
		return err
	}
	spec, err := kernels.LoadSpec(b.specPath)
	if err != nil {
		return err
	}
	if b.out, err = results.NewRunDir(o.out, "bisect-"+b.s.Name+"-"+spec.Name); err != nil {
		return err
	}
	// build builds commit k; nil, nil when it cannot be tested (a skip).
	build := func(k int) (*kernels.Spec, *kernels.Artifact, error) {
		at := spec.AtCommit(commits[k].ID)
		release, err := kernels.TreeRelease(ctx, b.g.cache(), at.Base)
		if err != nil {
			return nil, nil, err
		}
		if why := b.s.Unsupported(release); why != "" {
			fmt.Fprintf(b.stderr, "%s: release %s, skipped: %s\n", c.Label(k), release, why)
			return nil, nil, nil
		}
		a, err := b.build(ctx, c.Label(k), at)
		if a == nil {
			return nil, nil, err
		}
		return at.Flavoured(b.fl), a, nil
	}
	if o.metric != "" {
		return campaign.PerfBisect(ctx, b.s, o.metric, c, build, func(k int) string { return filepath.Join(b.out, fmt.Sprintf("c%d", k)) }, b.config, b.start, cmd.OutOrStdout(), b.stderr)
	}
	test := func(k int) (runner.Outcome, error) {
		at, a, err := build(k)
		if err != nil || at == nil {
			return runner.Skip, err
		}
		return b.runs(ctx, c.Label(k), fmt.Sprintf("c%d-%.12s", k, commits[k].ID), at, a)
	}
	if _, err := search(c, "range", o.runs, test, cmd.OutOrStdout(), b.stderr); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "  (%d runs, %.0fs; runs in %s)\n", b.runsUsed, time.Since(b.start).Seconds(), b.out)
	return nil
}

// steps is about how many probes a bisect of n candidates takes, ends included.
func steps(n int) int {
	s := 2
	for ; n > 1; n = (n + 1) / 2 {
		s++
	}
	return s
}
