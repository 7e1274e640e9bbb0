package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/patches"
)

// newPatchesCmd builds `lab patches`: show a series, check it against a tree.
func newPatchesCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "patches",
		Short: "Read patch series (quilt, git format-patch, lore mbox) and check them against kernel sources",
	}
	cmd.AddCommand(newPatchesShowCmd(), newPatchesCheckCmd(g))
	return cmd
}

// newPatchesShowCmd builds `lab patches show SERIES...`.
func newPatchesShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show SERIES...",
		Short: "List the patches of a series in application order: subject, author, date, file",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := patches.LoadAll(args...)
			if err != nil {
				return err
			}
			showSeries(cmd.OutOrStdout(), s)
			return nil
		},
	}
}

// showSeries prints a series header and one line per patch.
func showSeries(w io.Writer, s *patches.Series) {
	fmt.Fprintf(w, "%s: %d patches (%s, hash %s)\n", s.Name, len(s.Patches), s.Format, s.Hash()[:12])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, p := range s.Patches {
		author := p.Author
		if author == "" {
			author = "-"
		}
		fmt.Fprintf(tw, "%3d\t%s\t%s\t%s\t%s\n", p.Index, p.Subject, author, p.Date, p.File)
	}
	tw.Flush()
}

// patchesCheckOptions are the flags and arguments of lab patches check.
type patchesCheckOptions struct {
	series  []string
	tree    string
	kernel  string
	verbose bool
}

// newPatchesCheckCmd builds `lab patches check SERIES... --tree DIR | --kernel SPEC`.
func newPatchesCheckCmd(g *globalOptions) *cobra.Command {
	o := &patchesCheckOptions{}
	cmd := &cobra.Command{
		Use:   "check SERIES... (--tree DIR | --kernel SPEC)",
		Short: "Say how each patch applies, in order: cleanly, with offset/fuzz, already present, or where it conflicts",
		Long: "Check a series against a source tree without modifying it. With --kernel, the tree is the spec's\n" +
			"source as the lab builds it (extracted, with the spec's own patches applied). Exits 1 when a patch\n" +
			"does not apply, 2 on errors.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.series = args
			return patchesCheck(cmd.Context(), g, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.tree, "tree", "", "source tree to check against")
	cmd.Flags().StringVar(&o.kernel, "kernel", "", "kernel spec whose source to check against")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "print GNU patch's output for patches that do not apply cleanly")
	cmd.MarkFlagsMutuallyExclusive("tree", "kernel")
	cmd.MarkFlagsOneRequired("tree", "kernel")
	return cmd
}

// patchesCheck prints one line per patch and fails (exit 1) if any does not apply.
func patchesCheck(ctx context.Context, g *globalOptions, o *patchesCheckOptions, w io.Writer) error {
	s, err := patches.LoadAll(o.series...)
	if err != nil {
		return err
	}
	tree := o.tree
	if o.kernel != "" {
		spec, err := kernels.LoadSpec(o.kernel)
		if err != nil {
			return err
		}
		if tree, err = kernels.Source(ctx, spec, kernels.Options{CacheDir: g.cache()}); err != nil {
			return fmt.Errorf("kernel %s: %w", spec.Name, err)
		}
	}
	results, err := patches.Check(ctx, s, tree)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s (%d patches) against %s:\n", s.Name, len(s.Patches), tree)
	failed := 0
	for _, r := range results {
		fmt.Fprintf(w, "%3d  %-20s %s\n", r.Patch.Index, r.State, r.Patch.Subject)
		if r.State != patches.Applies {
			fmt.Fprintf(w, "     %s\n", r.Summary())
		}
		if o.verbose && r.State != patches.Applies {
			for _, line := range strings.Split(strings.TrimRight(r.Detail, "\n"), "\n") {
				fmt.Fprintf(w, "     | %s\n", line)
			}
		}
		if !r.State.OK() {
			failed++
		}
	}
	if failed > 0 {
		return &exitCodeError{code: exitFail, err: fmt.Errorf("%d of %d patches do not apply to %s", failed, len(results), tree)}
	}
	return nil
}
