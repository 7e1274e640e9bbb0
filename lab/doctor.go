package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"napilab/kernels"
	"napilab/runner/vm"
)

func newDoctorCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "List missing host tools and packages with the apt-get line that installs them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return doctor(cmd.OutOrStdout(), g.cacheDir)
		},
	}
}

func doctor(w io.Writer, cacheDir string) error {
	var specs []*kernels.Spec
	files, _ := filepath.Glob("kernels/*.yaml")
	for _, f := range files {
		if s, err := kernels.LoadSpec(f); err == nil {
			specs = append(specs, s)
		}
	}
	checks := append(kernels.HostChecks(specs...), kernels.FetchChecks(cacheDir, specs...)...)
	checks = append(checks, vm.HostChecks()...)
	missing := map[string]bool{}
	for _, c := range checks {
		mark := "ok     "
		if !c.OK {
			mark = "MISSING"
			if !strings.HasPrefix(c.Package, "(") {
				missing[c.Package] = true
			}
		}
		fmt.Fprintf(w, "%s  %-40s %s\n", mark, c.What, c.Package)
	}
	if len(missing) == 0 {
		fmt.Fprintln(w, "\nthe host has everything the lab needs")
		return nil
	}
	var pkgs []string
	for p := range missing {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	fmt.Fprintf(w, "\ninstall with:\n  apt-get install -y %s\n", strings.Join(pkgs, " "))
	return &exitCodeError{code: exitError, err: fmt.Errorf("%d host packages missing", len(pkgs))}
}
