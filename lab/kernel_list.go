package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/hashicorp/go-multierror"
	"github.com/spf13/cobra"

	"napilab/kernels"
)

// defaultSpecGlob is where list and gc look for specs when given none.
const defaultSpecGlob = "kernels/*.yaml"

// kernelListOptions are the flags and arguments of lab kernel list.
type kernelListOptions struct {
	specs []string
}

// newKernelListCmd builds `lab kernel list [SPEC...]`.
func newKernelListCmd(g *globalOptions) *cobra.Command {
	o := &kernelListOptions{}
	return &cobra.Command{
		Use:   "list [SPEC...]",
		Short: "List kernel specs (default " + defaultSpecGlob + ") and whether the cache holds their current build",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.specs = args
			return kernelList(cmd.Context(), g, o, cmd.OutOrStdout())
		},
	}
}

// kernelList prints one line per spec; specs that do not load make it exit 2 after the table.
func kernelList(ctx context.Context, g *globalOptions, o *kernelListOptions, w io.Writer) error {
	specs, loadErr := loadSpecFiles(o.specs)
	if len(o.specs) == 0 {
		specs = append(specs, adhocSpecs(g)...)
	}
	entries, err := kernels.List(ctx, g.cache(), specs)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SPEC\tEXTENDS\tPATCHES\tSTATE\tBZIMAGE\tBUILD\tARTIFACT")
	for _, e := range entries {
		extends := e.Extends
		if extends == "" {
			extends = "-"
		}
		switch {
		case e.Artifact != nil:
			info := e.Artifact.Info
			fmt.Fprintf(tw, "%s\t%s\t%d\tbuilt\t%s\t%.0fs\t%s\n", e.Spec.Name, extends, e.Patches,
				formatBytes(info.BzImageSize), info.Seconds, e.Artifact.Dir)
		case e.Err != nil:
			fmt.Fprintf(tw, "%s\t%s\t%d\tunknown: %v\t-\t-\t-\n", e.Spec.Name, extends, e.Patches, e.Err)
		default:
			fmt.Fprintf(tw, "%s\t%s\t%d\tnot built\t-\t-\t-\n", e.Spec.Name, extends, e.Patches)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return loadErr
}

// kernelGCOptions are the flags and arguments of lab kernel gc.
type kernelGCOptions struct {
	specs  []string
	keep   int
	dryRun bool
}

// newKernelGCCmd builds `lab kernel gc [--keep N] [--dry-run] [SPEC...]`.
func newKernelGCCmd(g *globalOptions) *cobra.Command {
	o := &kernelGCOptions{}
	cmd := &cobra.Command{
		Use:   "gc [SPEC...]",
		Short: "Remove cached kernels, work dirs and patched sources no spec (default " + defaultSpecGlob + ") needs",
		Long: "Remove artifacts that are neither the current build of a spec nor among its --keep newest,\n" +
			"the work dirs and patched sources of specs that no longer exist, and leftovers of interrupted\n" +
			"builds. Waits for running builds (and says which) and keeps kernels a run boots. Name every spec you still use:\n" +
			"the work dir of a spec gc is not told about is removed.",
		RunE: func(cmd *cobra.Command, args []string) error {
			o.specs = args
			return kernelGC(cmd.Context(), g, o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&o.keep, "keep", 1, "artifacts to keep per spec, newest first (besides its current build)")
	cmd.Flags().BoolVarP(&o.dryRun, "dry-run", "n", false, "only print what would be removed")
	return cmd
}

// kernelGC refuses to run unless every spec loads: a spec it cannot read would lose its work dir.
func kernelGC(ctx context.Context, g *globalOptions, o *kernelGCOptions, w io.Writer) error {
	if o.keep < 1 {
		return fmt.Errorf("bad --keep %d, want >= 1", o.keep)
	}
	specs, err := loadSpecFiles(o.specs)
	if err != nil {
		return fmt.Errorf("not collecting garbage, a spec does not load: %w", err)
	}
	if len(o.specs) == 0 {
		specs = append(specs, adhocSpecs(g)...)
	}
	removed, freed, err := kernels.GC(ctx, g.cache(), specs, kernels.GCOptions{Keep: o.keep, DryRun: o.dryRun,
		Progress: progressWriter(os.Stderr, false).report})
	verb := "removed"
	if o.dryRun {
		verb = "would remove"
	}
	for _, r := range removed {
		fmt.Fprintf(w, "%s %9s  %s  (%s)\n", verb, formatBytes(r.Bytes), r.Path, r.Why)
	}
	if o.dryRun {
		fmt.Fprintf(w, "would free %s\n", formatBytes(freed))
	} else {
		fmt.Fprintf(w, "freed %s\n", formatBytes(freed))
	}
	return err
}

// loadSpecFiles loads the given spec files, or every kernels/*.yaml; it
// returns the specs that loaded and an error listing the ones that did not.
func loadSpecFiles(paths []string) ([]*kernels.Spec, error) {
	if len(paths) == 0 {
		paths, _ = filepath.Glob(defaultSpecGlob)
		if len(paths) == 0 {
			return nil, fmt.Errorf("no specs given and none match %s (run lab from the napilab checkout)", defaultSpecGlob)
		}
	}
	var specs []*kernels.Spec
	var errs *multierror.Error
	for _, p := range paths {
		s, err := kernels.LoadSpec(p)
		if err != nil {
			errs = multierror.Append(errs, err)
			continue
		}
		specs = append(specs, s)
	}
	return specs, errs.ErrorOrNil()
}

// adhocSpecs loads the ad-hoc specs lab --tree wrote into the cache; one
// whose tree is gone is left out (gc then removes its work dir).
func adhocSpecs(g *globalOptions) []*kernels.Spec {
	paths, _ := filepath.Glob(filepath.Join(kernels.SpecsDir(g.cache()), "*.yaml"))
	var specs []*kernels.Spec
	for _, p := range paths {
		if s, err := kernels.LoadSpec(p); err == nil {
			specs = append(specs, s)
		}
	}
	return specs
}

// formatBytes renders a size for humans: 3.7 MiB.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
