package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"napilab/results"
)

// TestReadmeInStep: the README's CLI at a glance names every command and
// its subcommands, and its exit codes are the verdicts' and the signals'.
func TestReadmeInStep(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "## The CLI at a glance")
	j := strings.Index(readme, "## Exit codes")
	if i < 0 || j < i {
		t.Fatal("README lacks its CLI at a glance or its exit codes")
	}
	glance := readme[i:j]
	for _, c := range newRootCmd().Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if !strings.Contains(glance, "bin/lab "+c.Name()+" ") {
			t.Errorf("README's CLI at a glance lacks lab %s", c.Name())
			continue
		}
		var lines []string // the command's lines
		for _, l := range strings.Split(glance, "\n") {
			if strings.HasPrefix(l, "bin/lab "+c.Name()+" ") {
				lines = append(lines, strings.Fields(strings.Split(l, "#")[0])...)
			}
		}
		for _, sub := range c.Commands() {
			if !slices.Contains(lines, sub.Name()) {
				t.Errorf("README's CLI at a glance lacks lab %s %s", c.Name(), sub.Name())
			}
		}
	}
	codes := readme[j:]
	for _, v := range []results.Verdict{results.Pass, results.Fail, results.Error, results.Inconclusive} {
		if !strings.Contains(codes, fmt.Sprintf("%d %s", v.ExitCode(), v)) {
			t.Errorf("README's exit codes lack %d %s", v.ExitCode(), v)
		}
	}
	for _, s := range []string{"130 interrupted by Ctrl-C", "143 by SIGTERM"} {
		if !strings.Contains(codes, s) {
			t.Errorf("README's exit codes lack %q", s)
		}
	}
}
