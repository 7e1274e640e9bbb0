package main

import (
	"fmt"
	"napilab/kernels"
	"napilab/runner/campaign"
	"strings"

	"github.com/spf13/cobra"

	"napilab/scenarios"
)

// defaultKselftests run when lab kselftest names none: net selftests that
// need no hardware, pass on stock 6.1 and 6.12 under TCG and take about five
// minutes together. Left out: veth.sh, udpgro.sh and udpgro_fwd.sh (6.1's
// copies still expect veth to turn GRO on with XDP, which the 6.1.y kernel no
// longer does); so_txtime.sh, txtimestamp.sh and gro.sh (timing an emulated
// CPU misses: 6.12's copies relax it under KSFT_MACHINE_SLOW, which the lab
// sets under TCG, 6.1's do not; 6.1's gro.sh failed its "large" subtests,
// and only those, in 3 of 4 attempts on a quiet host and 2 of 2 beside a
// build, on the clean stock-6.1); tcp_fastopen_backup_key.sh and the
// fib/pmtu suites (tens of minutes under TCG). Name a test to run it anyway.
var defaultKselftests = []string{
	"net:reuseport_bpf", "net:reuseport_bpf_cpu", "net:reuseport_dualstack", "net:reuseaddr_conflict",
	"net:reuseport_addr_any.sh", "net:tun", "net:tap", "net:tls", "net:sk_bind_sendto_listen",
	"net:sk_connect_zero_addr", "net:run_netsocktests", "net:run_afpackettests", "net:altnames.sh",
	"net:netdevice.sh", "net:unicast_extensions.sh", "net:udpgso.sh", "net:ip_defrag.sh",
	"net:msg_zerocopy.sh", "net:bind_bhash.sh", "net:cmsg_so_mark.sh", "net:route_localnet.sh",
	"net:bareudp.sh", "net:icmp.sh",
}

type kselftestOptions struct {
	runOptions
	list  bool
	quiet bool
	cpus  int
}

func newKselftestCmd(g *globalOptions) *cobra.Command {
	o := &kselftestOptions{}
	cmd := &cobra.Command{
		Use:   "kselftest [COLLECTION:TEST...] [--kernel SPEC]...",
		Short: "Run upstream kselftests on a kernel, on the Debian image; exit 0 PASS, 1 FAIL, 2 ERROR",
		Long: `Builds the kernel with the collections' own config fragment merged (tools/testing/selftests/<c>/config,
then kernels/configs/kselftest.config), builds and installs the collections' selftests from the same
source with its uapi headers, boots the Debian image (debootstrap minbase + the tests' runtime tools,
with the agent as /init and the tests under /kselftest) and runs each test with the kselftest runner
and its timeout (the collection's settings file). Each test's KTAP result (ok / not ok / skip with its
reason, and the subtests it printed) goes into the run's result.json, junit.xml, result.ktap and
report.html, beside the splat and hang checks every lab run has.

Without tests it runs a set of net selftests that need no hardware:
  ` + strings.Join(defaultKselftests, " ") + `

A scenario can run kselftests too, wrapped in load and toggles: a step "kselftest: net:veth.sh".`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.list {
				return listKselftests(cmd, g, o)
			}
			tests := args
			if len(tests) == 0 {
				tests = defaultKselftests
			}
			for _, t := range tests {
				if !scenarios.ValidKselftest(t) {
					return fmt.Errorf("kselftest %q: want collection:test as kselftest-list.txt names it, e.g. net:veth.sh", t)
				}
			}
			s, err := kselftestScenario(tests, o.cpus)
			if err != nil {
				return err
			}
			o.Verbose = !o.quiet
			return runPlan(cmd, g, &o.runOptions, []campaign.Planned{{Scenario: s}}, 1, 1)
		},
	}
	cmd.Flags().StringArrayVarP(&o.Kernels, "kernel", "k", []string{"kernels/stock-6.1.yaml"}, "kernel spec (repeatable)")
	cmd.Flags().StringVarP(&o.Out, "out", "o", "results/runs", "folder for run folders")
	cmd.Flags().StringVar(&o.Accel, "accel", "", "kvm or tcg (default tcg, or $NAPILAB_ACCEL)")
	cmd.Flags().IntVar(&o.makeJobs, "make-jobs", 0, "make -j for kernel and selftest builds")
	cmd.Flags().IntVarP(&o.Repeat, "repeat", "n", 1, "runs on each kernel")
	cmd.Flags().IntVar(&o.cpus, "cpus", 2, "guest CPUs")
	cmd.Flags().DurationVar(&o.KselftestTimeout, "timeout", 0, "cap each test's timeout (default: the collection's settings file, 1500s for net on 6.1)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines, only the verdict")
	cmd.Flags().BoolVar(&o.BuildFirst, "build-first", false, buildFirstUsage)
	cmd.Flags().BoolVar(&o.list, "list", false, "build the net selftests and list the tests (collection:test)")
	addFlakeFlags(cmd, &o.Flakes)
	o.parallel = 1
	return cmd
}

// kselftestScenario is a scenario with one step per test.
func kselftestScenario(tests []string, cpus int) (*scenarios.Scenario, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "name: kselftest\ndescription: upstream kselftests on the Debian image\n")
	fmt.Fprintf(&b, "machine:\n  cpus: %d\n  memory_mb: %d\ntimeline:\n", cpus, campaign.DebianMemoryMB)
	for _, t := range tests {
		fmt.Fprintf(&b, "  - name: %q\n    kselftest: %q\n", t, t)
	}
	return scenarios.Parse("kselftest", []byte(b.String()), nil)
}

// listKselftests prints the tests the kernel's net (or named) collections install.
func listKselftests(cmd *cobra.Command, g *globalOptions, o *kselftestOptions) error {
	gs := newGuests(g, o.makeJobs, cmd.ErrOrStderr())
	for _, k := range o.Kernels {
		gu, err := gs.Build(cmd.Context(), k, true, kernels.Flavour{Selftests: []string{"net"}})
		if err != nil {
			return err
		}
		for _, t := range gu.Tests {
			fmt.Fprintln(cmd.OutOrStdout(), t)
		}
	}
	return nil
}
