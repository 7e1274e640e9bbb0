package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"napilab/kernels"
)

// kernelPackOptions are `lab kernel pack`'s flags.
type kernelPackOptions struct {
	out      string
	flavours []string
}

// newKernelPackCmd builds `lab kernel pack SPEC... [--flavour F]... -o FILE`.
func newKernelPackCmd(g *globalOptions) *cobra.Command {
	o := &kernelPackOptions{}
	cmd := &cobra.Command{
		Use:   "pack SPEC... -o FILE",
		Short: "Write built kernels to an archive that lab kernel unpack installs on another machine",
		Long: "Write the cached kernels of the specs (and each --flavour of them) to a tar archive: bzImage,\n" +
			"config, build.json, with their sha256s. Nothing is built: a kernel not in the cache is an error.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return kernelPack(cmd.Context(), g, o, args, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "archive to write (required)")
	cmd.Flags().StringArrayVar(&o.flavours, "flavour", nil, "also pack this flavour of each spec, e.g. debug or debug,kselftest (repeatable)")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

// kernelPack packs the kernels into o.out, written atomically.
func kernelPack(ctx context.Context, g *globalOptions, o *kernelPackOptions, paths []string, log io.Writer) error {
	var fls []kernels.Flavour
	for _, s := range o.flavours {
		fl, err := kernels.ParseFlavour(s)
		if err != nil {
			return err
		}
		fls = append(fls, fl)
	}
	var specs []*kernels.Spec
	for _, p := range paths {
		spec, err := kernels.LoadSpec(p)
		if err != nil {
			return err
		}
		specs = append(specs, spec)
		for _, fl := range fls {
			specs = append(specs, spec.Flavoured(fl))
		}
	}
	f, err := os.CreateTemp(filepath.Dir(o.out), ".tmp-"+filepath.Base(o.out)+"-*")
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", o.out, err)
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	defer f.Close()
	arts, err := kernels.Pack(ctx, f, specs, kernels.Options{CacheDir: g.cache()})
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("failed to write %s: %w", o.out, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil { // CreateTemp's 0600 is for secrets
		return fmt.Errorf("failed to write %s: %w", o.out, err)
	}
	if err := os.Rename(f.Name(), o.out); err != nil {
		return fmt.Errorf("failed to write %s: %w", o.out, err)
	}
	for _, a := range arts {
		fmt.Fprintf(log, "packed kernel %s (%s)\n", a.Info.Spec, a.Dir)
	}
	return nil
}

// kernelUnpackOptions are `lab kernel unpack`'s flags.
type kernelUnpackOptions struct {
	specs []string
	quiet bool
}

// newKernelUnpackCmd builds `lab kernel unpack FILE [--spec SPEC]...`.
func newKernelUnpackCmd(g *globalOptions) *cobra.Command {
	o := &kernelUnpackOptions{}
	cmd := &cobra.Command{
		Use:   "unpack FILE",
		Short: "Install the kernels of a lab kernel pack archive into the cache",
		Long: "Install the kernels of an archive from lab kernel pack, after checking every file against its\n" +
			"recorded size and sha256 and each build record against its bzImage. With --spec, each kernel\n" +
			"must be what that spec (or a flavour of it) builds on this machine: same inputs, same key.\n" +
			"Prints the installed bzImages.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return kernelUnpack(cmd.Context(), g, o, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringArrayVar(&o.specs, "spec", nil, "check the kernels against this spec (repeatable)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress output")
	return cmd
}

// kernelUnpack unpacks the archive at path.
func kernelUnpack(ctx context.Context, g *globalOptions, o *kernelUnpackOptions, path string, out, log io.Writer) error {
	var specs []*kernels.Spec
	for _, p := range o.specs {
		spec, err := kernels.LoadSpec(p)
		if err != nil {
			return err
		}
		specs = append(specs, spec)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	opts := kernels.Options{CacheDir: g.cache()}
	if p := progressWriter(log, o.quiet); p != nil {
		opts.Progress = p.report
	}
	arts, err := kernels.Unpack(ctx, f, specs, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, a := range arts {
		state := "installed"
		if a.Cached {
			state = "already cached"
		}
		fmt.Fprintf(log, "kernel %s: %s (%s)\n", a.Info.Spec, state, a.Dir)
		fmt.Fprintln(out, a.BzImage)
	}
	return nil
}
