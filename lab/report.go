package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/go-multierror"
	"github.com/spf13/cobra"

	"napilab/results"
	"napilab/results/report"
)

func newReportCmd(_ *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "report FOLDER...",
		Short: "Re-render the reports of run folders (report.html, result.ktap, kcidb.json) and comparison folders (compare.html)",
		Long: `Reads a run folder's result.json and samples.jsonl and writes report.html, result.ktap and
kcidb.json beside them; for a comparison folder (one with compare.json) writes compare.html and
the reports of each of its a-N and b-N runs.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return renderReports(cmd.OutOrStdout(), args)
		},
	}
}

// renderReports renders every folder, reporting each folder's failure.
func renderReports(w io.Writer, dirs []string) error {
	var errs *multierror.Error
	for _, dir := range dirs {
		if err := renderReport(w, dir); err != nil {
			errs = multierror.Append(errs, fmt.Errorf("%s: %w", dir, err))
		}
	}
	if errs != nil {
		return &exitCodeError{code: exitError, err: errs}
	}
	return nil
}

func renderReport(w io.Writer, dir string) error {
	if report.IsComparison(dir) {
		if err := report.WriteComparison(dir); err != nil {
			return err
		}
		fmt.Fprintln(w, filepath.Join(dir, report.CompareHTMLFile))
		return nil
	}
	r, err := results.Read(filepath.Join(dir, results.ResultFile))
	if err != nil {
		return err
	}
	if err := report.WriteRun(dir, r); err != nil {
		return err
	}
	fmt.Fprintln(w, filepath.Join(dir, report.HTMLFile))
	return nil
}

type resultsListOptions struct {
	out string
	n   int
}

func newResultsCmd(_ *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "results", Short: "Browse run and comparison folders"}
	o := &resultsListOptions{}
	list := &cobra.Command{
		Use:   "list",
		Short: "List recent run and comparison folders, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listResults(cmd.OutOrStdout(), o)
		},
	}
	list.Flags().StringVarP(&o.out, "out", "o", "results/runs", "folder holding run and comparison folders")
	list.Flags().IntVarP(&o.n, "number", "n", 20, "how many folders to show (0: all)")
	var mergeOut string
	merge := &cobra.Command{
		Use:   "merge SHARD_FOLDER...",
		Short: "Join the run folders of CI shards into one folder with one junit.xml; exit with the worst verdict",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := report.Merge(args, mergeOut)
			if err != nil {
				return err
			}
			worst := results.Pass
			for _, r := range rs {
				fmt.Fprintf(cmd.OutOrStdout(), "%-5s %s on %s\n", r.Verdict, r.Scenario, r.Kernel.Spec)
				if r.Verdict.Worse(worst) {
					worst = r.Verdict
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d runs merged into %s (junit.xml)\n", len(rs), mergeOut)
			if worst != results.Pass {
				return &exitCodeError{code: worst.ExitCode()}
			}
			return nil
		},
	}
	merge.Flags().StringVarP(&mergeOut, "out", "o", "results/merged", "the merged folder")
	cmd.AddCommand(list, merge, newResultsInvariantsCmd(), newResultsNoiseCmd())
	return cmd
}

func listResults(w io.Writer, o *resultsListOptions) error {
	folders, err := report.ListFolders(o.out)
	if errors.Is(err, fs.ErrNotExist) {
		_, err = fmt.Fprintf(w, "no runs in %s yet (lab run writes them there; -o names another folder)\n", o.out)
		return err
	}
	if err != nil {
		return err
	}
	if o.n > 0 && len(folders) > o.n {
		folders = folders[:o.n]
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSCENARIO\tKERNEL\tVERDICT\tFOLDER\tNOTE")
	for _, f := range folders {
		verdict := string(f.Verdict)
		if f.Comparison {
			verdict = "compare " + verdict
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Time.Local().Format("2006-01-02 15:04:05"),
			dash(f.Scenario), dash(f.Kernel), dash(strings.TrimSpace(verdict)), f.Path, f.Note)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
