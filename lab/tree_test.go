package main

import (
	"strings"
	"testing"
)

// TestTreeFlags: the tree flags and the bisect range are checked before
// anything is built or booted.
func TestTreeFlags(t *testing.T) {
	t.Chdir("..")
	cache := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"rev without tree", []string{"kernel", "build", "--rev", "v6.1"}, "--rev, --name and --config-from need --tree"},
		{"nothing to build", []string{"kernel", "build"}, "name a spec or --tree DIR"},
		{"tree not a repository", []string{"kernel", "build", "--tree", cache, "--rev", "HEAD"}, "is not a git repository"},
		{"bisect nothing", []string{"bisect", "scenarios/napi-disable-race.yaml"}, "--series SERIES, or --tree DIR --good A --bad B"},
		{"bisect both", []string{"bisect", "scenarios/napi-disable-race.yaml", "--series", "x", "--tree", "."}, "exclude each other"},
		{"bisect no range", []string{"bisect", "scenarios/napi-disable-race.yaml", "--tree", ".", "--good", "v6.1"}, "--tree needs --good and --bad"},
		{"bisect range without tree", []string{"bisect", "scenarios/napi-disable-race.yaml", "--series", "x", "--bad", "HEAD"}, "--good and --bad need --tree"},
		{"bisect with rev", []string{"bisect", "scenarios/napi-disable-race.yaml", "--tree", ".", "--rev", "x", "--good", "a", "--bad", "b"}, "--rev does not go with bisect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := execLab(t, append(tc.args, "--cache", cache)...); !strings.Contains(got, tc.want) {
				t.Errorf("lab %v: %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}

func TestStockFor(t *testing.T) {
	t.Chdir("..")
	for _, tc := range []struct{ release, want string }{
		{"6.1.158", "kernels/stock-6.1.yaml"},
		{"6.13.0-rc3", "kernels/stock-6.12.yaml"},
		{"7.4.1", "kernels/stock-7.3.yaml"},
		{"5.15.0", "kernels/stock-6.1.yaml"},
		{"", "kernels/stock-6.1.yaml"},
	} {
		if got, err := stockFor(tc.release); err != nil || got != tc.want {
			t.Errorf("stockFor(%q) = %q, %v; want %q", tc.release, got, err, tc.want)
		}
	}
}
