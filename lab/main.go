// Command lab is napilab's command line: build kernels, boot them in QEMU,
// run YAML scenarios and report verdicts.
//
//	lab doctor
//	lab kernel build kernels/stock-6.1.yaml
//	lab run scenarios/threaded-toggle-under-load.yaml --kernel kernels/stock-6.1.yaml
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"napilab/scenarios"
)

// Exit codes: the verdict of a run, or 2 for bad input and lab failures;
// 128+N when signal N (SIGINT: 130) interrupted lab.
const (
	exitPass  = 0
	exitFail  = 1
	exitError = 2
)

// exitError carries a specific exit code out of a command.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the CLI and maps errors to exit codes in one place.
func run(args []string) int {
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	root := newRootCmd()
	root.SetArgs(args)
	it := watchSignals(sigs, os.Stderr, stoppingFor(root, args), abortGrace, os.Exit)
	err := root.ExecuteContext(it.ctx)
	var ec *exitCodeError
	if code := it.code(); code != 0 {
		if err != nil && !(errors.As(err, &ec) && ec.err == nil) {
			fmt.Fprintln(os.Stderr, "lab:", err)
		}
		return code
	}
	if err == nil {
		return exitPass
	}
	if errors.As(err, &ec) {
		if ec.err != nil {
			fmt.Fprintln(os.Stderr, "lab:", ec.err)
		}
		return ec.code
	}
	fmt.Fprintln(os.Stderr, "lab:", err)
	return exitError
}

// globalOptions are flags every command takes.
type globalOptions struct {
	cacheDir string
}

func newRootCmd() *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "lab",
		Short:         "napilab: a QEMU test lab for kernel NAPI, softirq and RPS patches",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.cacheDir, "cache", "", "cache folder for kernels and images (default $NAPILAB_CACHE or ~/.cache/napilab)")
	root.PersistentFlags().StringVar(&scenarios.ShippedDir, "scenarios", os.Getenv("NAPILAB_SCENARIOS"),
		"the shipped scenarios folder, which includes fall back to (default $NAPILAB_SCENARIOS, else the scenarios/ above the file or beside the lab binary's folder)")
	root.AddCommand(newDoctorCmd(g), newKernelCmd(g), newRunCmd(g), newScenarioCmd(), newCompareCmd(g), newReproCmd(g), newBisectCmd(g), newBaselineCmd(g), newPatchesCmd(g), newReportCmd(g), newResultsCmd(g), newShellCmd(g), newKselftestCmd(g), newExploreCmd(g))
	return root
}
