package main

import (
	"fmt"
	"napilab/kernels"
	"napilab/runner/campaign"

	"github.com/spf13/cobra"

	"napilab/images"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

type shellOptions struct {
	kernel  string
	params  []string
	out     string
	accel   string
	flavour string
	image   string
}

// shellScenario is the topology-less machine lab shell boots without a scenario.
const shellScenario = "name: shell\nmachine: {cpus: 2}\ntimeline:\n  - sleep: 1ms\n"

func newShellCmd(g *globalOptions) *cobra.Command {
	o := &shellOptions{}
	cmd := &cobra.Command{
		Use:   "shell [SCENARIO] [--kernel SPEC]",
		Short: "Boot a kernel (with a scenario's machine and topology) and get a shell in the guest",
		Long: `Boots the kernel with u-root's shell and core tools (ls, cat, ip, ps, dmesg, mount, grep, ping, ...)
next to the agent; with a scenario its machine, NICs, veths and namespaces are set up first (the
timeline is not run). The serial console is your terminal: Ctrl-C goes to the guest. Leave with
"echo o > /proc/sysrq-trigger" (power off). The console is saved in a run folder as usual.

--image debian boots the Debian image instead (bash, iproute2, ethtool, python3, socat, tcpdump...);
a scenario with kselftest steps gets it with that kernel's selftests under /kselftest, built with the
collections' config merged into the kernel, as lab kselftest does.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			params, err := parseParams(o.params)
			if err != nil {
				return err
			}
			fl, err := kernels.ParseFlavour(o.flavour)
			if err != nil {
				return err
			}
			var s *scenarios.Scenario
			if len(args) == 1 {
				s, err = scenarios.Open(args[0], params)
			} else {
				s, err = scenarios.Parse("shell", []byte(shellScenario), nil)
			}
			if err != nil {
				return err
			}
			var cfg runner.Config
			switch o.image {
			case "debian":
				s.Machine.Image = scenarios.ImageDebian
				s.Machine.MemoryMB = max(s.Machine.MemoryMB, campaign.DebianMemoryMB)
				gs := newGuests(g, 0, cmd.ErrOrStderr())
				gs.Flavour = fl
				cfg, err = gs.Config(ctx, o.kernel, s)
			case "shell":
				if s.NeedsDebian() {
					return fmt.Errorf("%s needs the Debian image: add --image debian", s.Name)
				}
				k, spec, berr := buildKernelFor(ctx, g, o.kernel, fl, kernels.Options{}, progressWriter(cmd.ErrOrStderr(), false))
				if berr != nil {
					return berr
				}
				img, ierr := images.BuildShell(ctx, images.Options{CacheDir: g.cache()})
				if ierr != nil {
					return ierr
				}
				cfg = campaign.GuestConfig(o.kernel, spec, k, img)
			default:
				return fmt.Errorf("--image %q: want shell or debian", o.image)
			}
			if err != nil {
				return err
			}
			dir, err := results.NewRunDir(o.out, "shell-"+cfg.Kernel.Spec)
			if err != nil {
				return err
			}
			cfg.Scenario, cfg.OutDir, cfg.Accel, cfg.Params, cfg.Shell = s, dir, o.accel, params, true
			cfg.Logf = func(f string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "  "+f+"\n", a...) }
			res := runner.Run(ctx, cfg)
			fmt.Fprintf(cmd.OutOrStdout(), "\nshell ended: %s; run folder %s\n", res.Verdict, dir)
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.kernel, "kernel", "k", "kernels/stock-6.1.yaml", "kernel spec")
	cmd.Flags().StringArrayVarP(&o.params, "param", "p", nil, "scenario parameter name=value")
	cmd.Flags().StringVarP(&o.out, "out", "o", "results/runs", "folder for the run folder")
	cmd.Flags().StringVar(&o.accel, "accel", "", "kvm or tcg")
	cmd.Flags().StringVar(&o.flavour, "flavour", "", flavourUsage)
	cmd.Flags().StringVar(&o.image, "image", "shell", "guest userspace: shell (u-root tools) or debian")
	return cmd
}
