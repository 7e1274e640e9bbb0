package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/images"
	"napilab/kernels"
	"napilab/results"
	"napilab/scenarios"
)

// debianGuest builds (or finds) stock-6.1 with the net selftests' config
// merged, its net selftests and the Debian image holding them.
func debianGuest(t testing.TB) (*kernels.Artifact, *images.Image, *kernels.Selftests) {
	t.Helper()
	guest(t) // the same skips
	spec, err := kernels.LoadSpec("../kernels/stock-6.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec = spec.WithSelftests([]string{"net"})
	ctx := context.Background()
	opts := kernels.Options{CacheDir: kernels.DefaultCacheDir()}
	k, err := kernels.Build(ctx, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kernels.BuildSelftests(ctx, spec, k, opts)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := images.BuildGuestImage(ctx, images.Options{CacheDir: kernels.DefaultCacheDir(), ModuleDir: ".."},
		images.DefaultDebian(), k.Dir, st.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// The image comes back held (no prune removes it); the cleanup also
	// keeps the hold's file reachable, or the GC would close it mid-run.
	t.Cleanup(img.Release)
	return k, img, st
}

// TestKselftests runs upstream selftests on the Debian image: one that
// passes, one whose program did not compile on the host (a skip with the
// compiler's reason), and one the lab's timeout kills (a FAIL that names it).
func TestKselftests(t *testing.T) {
	k, img, st := debianGuest(t)
	scenario := filepath.Join(t.TempDir(), "ks.yaml")
	os.WriteFile(scenario, []byte(`name: ks
machine: {cpus: 2, memory_mb: 1024}
timeline:
  - kselftest: [net:reuseport_bpf, net:tls]
  - name: slow
    kselftest: net:unicast_extensions.sh
`), 0o644)
	res := runScenario(t, scenario, k, img, func(c *testConfig) {
		c.MinMemoryMB = 1024
		c.KselftestTimeouts = map[string]time.Duration{"net": 2 * time.Second}
	})
	if res.Verdict != results.Fail || len(res.Kselftests) != 3 {
		t.Fatalf("verdict %s, %d kselftests, want FAIL with 3: %v\n%s", res.Verdict, len(res.Kselftests), res.Reasons, res.ConsoleTail)
	}
	byName := map[string]results.Kselftest{}
	for _, ks := range res.Kselftests {
		byName[ks.Name] = ks
	}
	if ks := byName["net:reuseport_bpf"]; ks.Status != results.KPass {
		t.Errorf("reuseport_bpf: %s %s\n%s", ks.Status, ks.Reason, ks.Output)
	}
	if ks := byName["net:tls"]; st.NotBuilt["net/tls"] != "" && (ks.Status != results.KSkip || !strings.Contains(ks.Output, "did not compile")) {
		t.Errorf("tls (not built: %s): %s %q", st.NotBuilt["net/tls"], ks.Status, ks.Output)
	}
	if ks := byName["net:unicast_extensions.sh"]; ks.Status != results.KTimeout || ks.Step != "slow" {
		t.Errorf("unicast_extensions.sh: %s (%s) in step %q, want timeout in step slow", ks.Status, ks.Reason, ks.Step)
	}
	if want := "kselftest net:unicast_extensions.sh: timeout"; !strings.Contains(strings.Join(res.Reasons, "\n"), want) {
		t.Errorf("reasons %q lack %q", res.Reasons, want)
	}
	if res.Hang != nil {
		t.Errorf("a killed test is not a hang: %+v", res.Hang)
	}
}

// TestShippedKselftestScenarios runs the shipped scenarios that need the
// Debian image.
func TestShippedKselftestScenarios(t *testing.T) {
	k, img, st := debianGuest(t)
	files, _ := filepath.Glob("../scenarios/*.yaml")
	ran := 0
	for _, f := range files {
		s, err := scenarios.Open(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !s.NeedsDebian() {
			continue
		}
		ran++
		t.Run(filepath.Base(f), func(t *testing.T) {
			res := runShipped(t, f, k, img, func(c *testConfig) {
				c.MinMemoryMB = 1024
				c.KselftestTimeouts = map[string]time.Duration{"net": st.Timeout("net")}
			})
			if res.Verdict != results.Pass {
				t.Fatalf("verdict %s: %v\n%s", res.Verdict, res.Reasons, res.ConsoleTail)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no shipped scenario needs the Debian image; kselftest-under-toggle should")
	}
}
