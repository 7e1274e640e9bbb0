package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"napilab/kernels"
)

func newKernelCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "kernel", Short: "Build and inspect lab kernels"}
	cmd.AddCommand(newKernelBuildCmd(g), newKernelListCmd(g), newKernelGCCmd(g), newKernelPackCmd(g), newKernelUnpackCmd(g))
	return cmd
}

type kernelBuildOptions struct {
	jobs      int
	quiet     bool
	selftests []string
	flavour   string
	tree      treeOptions
}

func newKernelBuildCmd(g *globalOptions) *cobra.Command {
	o := &kernelBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build SPEC... | build --tree DIR [--rev REV] [--name NAME]",
		Short: "Build kernels from specs or a local tree, or find them in the cache",
		Long: `Builds each spec, or with --tree a local kernel tree: as it is on disk (uncommitted and untracked
files too), or with --rev a revision of its git repository. The tree is exported into the cache and
built there out of tree; nothing is written to it. Its spec is written to <cache>/specs/NAME.yaml,
usable with -k; its config (fragments, cmdline) is the stock spec's nearest below the tree's release.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl, err := kernels.ParseFlavour(o.flavour)
			if err != nil {
				return err
			}
			tree, err := o.tree.set()
			if err != nil {
				return err
			}
			if tree {
				path, err := o.tree.specPath(cmd.Context(), g)
				if err != nil {
					return err
				}
				args = append(args, path)
			}
			if len(args) == 0 {
				return fmt.Errorf("name a spec or --tree DIR")
			}
			fl = fl.Join(kernels.Flavour{Selftests: o.selftests})
			for _, spec := range args {
				a, _, err := buildKernelFor(cmd.Context(), g, spec, fl, kernels.Options{Jobs: o.jobs}, progressWriter(cmd.ErrOrStderr(), o.quiet))
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), a.BzImage)
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&o.jobs, "jobs", "j", 0, "make -j (default: number of CPUs)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	cmd.Flags().StringSliceVar(&o.selftests, "kselftest", nil, "also merge these kselftest collections' config fragments (e.g. net)")
	cmd.Flags().StringVar(&o.flavour, "flavour", "", flavourUsage)
	addTreeFlags(cmd, &o.tree)
	return cmd
}

func (g *globalOptions) cache() string {
	if g.cacheDir != "" {
		return g.cacheDir
	}
	return kernels.DefaultCacheDir()
}

// buildKernel loads a spec and builds it, reporting progress to stderr.
func buildKernel(ctx context.Context, g *globalOptions, path string, jobs int, progress *progressPrinter) (*kernels.Artifact, *kernels.Spec, error) {
	return buildKernelFor(ctx, g, path, kernels.Flavour{}, kernels.Options{Jobs: jobs}, progress)
}

// flavourUsage documents --flavour wherever a command builds kernels.
const flavourUsage = "build flavour: debug (KASAN, lockdep, UBSAN, kmemleak), kselftest[-<collection>]; comma-separated"

// buildKernelFor builds the spec at path as flavour fl (the zero Flavour:
// the spec as it is).
// opts gives make's -j and CacheOnly; the cache and progress (nil: none)
// are set here.
func buildKernelFor(ctx context.Context, g *globalOptions, path string, fl kernels.Flavour, opts kernels.Options, progress *progressPrinter) (*kernels.Artifact, *kernels.Spec, error) {
	return buildPinned(ctx, g, path, "", fl, opts, progress)
}

// buildPinned is buildKernelFor with a tree or git base built at commit
// when commit is set (lab repro, lab bisect).
func buildPinned(ctx context.Context, g *globalOptions, path, commit string, fl kernels.Flavour, opts kernels.Options, progress *progressPrinter) (*kernels.Artifact, *kernels.Spec, error) {
	spec, err := kernels.LoadSpec(path)
	if err != nil {
		return nil, nil, err
	}
	if commit != "" {
		spec = spec.AtCommit(commit)
	}
	for _, c := range fl.Selftests {
		if !kernels.ValidCollection(c) {
			return nil, nil, fmt.Errorf("bad kselftest collection %q, want a folder of tools/testing/selftests such as net", c)
		}
	}
	spec = spec.Flavoured(fl)
	start := time.Now()
	opts.CacheDir = g.cache()
	if progress != nil {
		opts.Progress = progress.report
	}
	a, err := kernels.Build(ctx, spec, opts)
	progress.end()
	if err != nil {
		return nil, nil, fmt.Errorf("kernel %s: %w", spec.Name, err)
	}
	state := "built"
	if a.Cached {
		state = "cached"
	}
	fmt.Fprintf(os.Stderr, "kernel %s: %s in %.2fs (%s)\n", spec.Name, state, time.Since(start).Seconds(), a.Dir)
	if n := len(a.Info.Unmet); n > 0 {
		fmt.Fprintf(os.Stderr, "kernel %s: %d kselftest config settings not met (see %s/build.json)\n", spec.Name, n, a.Dir)
	}
	return a, spec, nil
}
