package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestExitCodes(t *testing.T) {
	if err := os.Chdir(".."); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir("lab")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\ntimeline:\n  - slep: 1s\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"unknown command", []string{"frobnicate"}, exitError},
		{"broken scenario", []string{"run", bad}, exitError},
		{"missing scenario", []string{"run", "nope.yaml"}, exitError},
		{"undeclared parameter", []string{"run", "scenarios/threaded-toggle-under-load.yaml", "-p", "nope=1"}, exitError},
		{"bad parameter", []string{"run", "scenarios/threaded-toggle-under-load.yaml", "-p", "nope"}, exitError},
		{"missing kernel spec", []string{"kernel", "build", "kernels/nope.yaml"}, exitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.args); got != tc.want {
				t.Errorf("lab %v exited %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}

func TestParseParams(t *testing.T) {
	got, err := parseParams([]string{"queues=4", "period=50ms", "x=a=b"})
	if err != nil || got["queues"] != "4" || got["period"] != "50ms" || got["x"] != "a=b" {
		t.Errorf("parseParams = %v, %v", got, err)
	}
	if _, err := parseParams([]string{"=1"}); err == nil {
		t.Error("empty name accepted")
	}
}
