package main

import (
	"fmt"
	"io"

	"github.com/hashicorp/go-multierror"
	"github.com/spf13/cobra"

	"napilab/results/metrics"
	"napilab/scenarios"
)

func newScenarioCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "scenario", Short: "Check, explain and describe scenario files"}
	var params []string
	var strict bool
	lint := &cobra.Command{
		Use:   "lint FILE...",
		Short: "Report every problem in scenario files as file:line:col; exit 2 on any error (and with --strict on any warning)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parseParams(params)
			if err != nil {
				return err
			}
			return lintFiles(cmd.OutOrStdout(), args, p, strict)
		},
	}
	lint.Flags().StringArrayVarP(&params, "param", "p", nil, "parameter name=value")
	lint.Flags().BoolVar(&strict, "strict", false, "treat warnings as problems")
	explain := &cobra.Command{
		Use:   "explain FILE",
		Short: "Print the resolved scenario as a plan: topology, loads, timeline, assertions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parseParams(params)
			if err != nil {
				return err
			}
			s, err := scenarios.Open(args[0], p)
			if err != nil {
				return err
			}
			s.Explain(cmd.OutOrStdout())
			return nil
		},
	}
	explain.Flags().StringArrayVarP(&params, "param", "p", nil, "parameter name=value")
	schema := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files (for editors)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := scenarios.Schema()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), string(b))
			return err
		},
	}
	metrics := &cobra.Command{
		Use:   "metrics",
		Short: "List the metric names assertions can use",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			listMetrics(cmd.OutOrStdout())
		},
	}
	var from []string
	var out string
	newCmd := &cobra.Command{
		Use:   "new NAME [--from nic,veth-peer] [-o FILE]",
		Short: "Write a commented starting scenario that lints clean (NAME.yaml unless -o)",
		Long: `Writes a new scenario file: the editor's schema modeline, the header every shipped scenario
has (what it measures, what it guards), the shipped fragments --from names merged in (nic: a virtio-net
NIC with a host UDP flood; veth-peer: a veth pair into netns peer with a UDP load; none: a veth pair of
its own), their loads started and stopped around a named sleep, and no-splat plus a datagrams check.
It never overwrites a file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := out
			if path == "" {
				path = args[0] + ".yaml"
			}
			if err := scenarios.WriteNew(path, args[0], from); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s: written; lab scenario explain %s shows the plan\n", path, path)
			return err
		},
	}
	newCmd.Flags().StringSliceVar(&from, "from", nil, "shipped fragments to include (nic, veth-peer)")
	newCmd.Flags().StringVarP(&out, "out", "o", "", "the file to write (default NAME.yaml)")
	cmd.AddCommand(lint, explain, schema, metrics, newCmd)
	return cmd
}

// lintFiles prints every file's errors and warnings; warnings alone pass
// unless strict.
func lintFiles(w io.Writer, files []string, params map[string]string, strict bool) error {
	var errs *multierror.Error
	for _, f := range files {
		s, err := scenarios.Open(f, params)
		if err != nil {
			fmt.Fprintln(w, err)
			errs = multierror.Append(errs, err)
			continue
		}
		for _, warning := range s.Warnings {
			fmt.Fprintln(w, warning)
		}
		if strict && len(s.Warnings) > 0 {
			errs = multierror.Append(errs, fmt.Errorf("%s: %d warnings", f, len(s.Warnings)))
			continue
		}
		fmt.Fprintf(w, "%s: ok\n", f)
	}
	if errs != nil {
		return &exitCodeError{code: exitError, err: fmt.Errorf("%d of %d files have problems", len(errs.Errors), len(files))}
	}
	return nil
}

func listMetrics(w io.Writer) {
	fmt.Fprintln(w, "metric names: <family>.<field>[.cpuN]; without .cpuN per-CPU fields are summed")
	for _, m := range metrics.Known {
		fmt.Fprintf(w, "\n%s  (%s, %s)\n  %s\n", m.Pattern, m.File, m.Unit, m.Meaning)
	}
}
