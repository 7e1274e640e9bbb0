package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintWarnings: warnings are printed and pass; --strict fails on them;
// errors fail either way.
func TestLintWarnings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, perf string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(`name: t
topology:
  nics: [{name: eth0, address: 10.0.0.2/24, host: 10.0.0.1/24}]
loads:
  l: {kind: udp, from: host, to: {nic: eth0, port: 9}}
timeline:
  - start: l
perf:
  budgets:
    - `+perf+"\n"), 0o644)
		return p
	}
	noisy := write("noisy.yaml", "{metric: l.rx_pps, max_drop: 2%, noise: 6%}")
	quiet := write("quiet.yaml", "{metric: l.rx_pps, max_drop: 20%, noise: 6%}")
	broken := write("broken.yaml", "{metric: l.rx_pps, max_drop: 0.2}")
	for _, tc := range []struct {
		name   string
		files  []string
		strict bool
		code   int // 0: no error
		out    []string
	}{
		{"warning passes", []string{noisy}, false, 0, []string{noisy + ":10:7: warning: budget max_drop 2% on l.rx_pps is tighter than the noise allows", noisy + ": ok"}},
		{"strict fails on a warning", []string{noisy, quiet}, true, exitError, []string{"warning: budget max_drop 2%", quiet + ": ok"}},
		{"strict without warnings", []string{quiet}, true, 0, []string{quiet + ": ok"}},
		{"error", []string{broken}, false, exitError, []string{broken + `:10:36: bad percentage "0.2"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			err := lintFiles(&b, tc.files, nil, tc.strict)
			var ec *exitCodeError
			switch {
			case tc.code == 0 && err != nil:
				t.Errorf("lint failed: %v", err)
			case tc.code != 0 && (!errors.As(err, &ec) || ec.code != tc.code):
				t.Errorf("lint = %v, want exit code %d", err, tc.code)
			}
			for _, want := range tc.out {
				if !strings.Contains(b.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, b.String())
				}
			}
			if strings.Contains(b.String(), "at least one budget") {
				t.Errorf("a budget that failed to decode also reads as missing:\n%s", b.String())
			}
			if tc.strict && tc.code != 0 && strings.Contains(b.String(), tc.files[0]+": ok") {
				t.Errorf("a file with warnings is ok under --strict:\n%s", b.String())
			}
		})
	}
}
