package kernels

import (
	"context"
	"os"
	"testing"
	"time"
)

// skipUnlessRealBuild skips tests that run make on the real kernel source.
func skipUnlessRealBuild(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real kernel build skipped in -short mode")
	}
	if _, err := os.Stat("/usr/src/linux-source-6.1.tar.xz"); err != nil {
		t.Skip("real kernel build needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)")
	}
}

func TestBuildStock(t *testing.T) {
	skipUnlessRealBuild(t)
	spec, err := LoadSpec("stock-6.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	phase := ""
	opts := Options{Progress: func(p Progress) {
		if p.Phase != phase {
			phase = p.Phase
			t.Logf("%6.1fs %-8s objects=%d %s", p.Elapsed.Seconds(), p.Phase, p.Objects, p.Line)
		}
	}}
	start := time.Now()
	first, err := Build(ctx, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first Build: %v, cached=%v, %s (%d bytes)", time.Since(start), first.Cached, first.BzImage, first.Info.BzImageSize)
	if fi, err := os.Stat(first.BzImage); err != nil || fi.Size() == 0 {
		t.Fatalf("bzImage missing or empty: %v", err)
	}

	start = time.Now()
	second, err := Build(ctx, spec, opts)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second Build: %v, cached=%v", took, second.Cached)
	if !second.Cached || second.Dir != first.Dir {
		t.Errorf("second Build = %+v, want a cache hit of %s", second, first.Dir)
	}
	if took >= time.Second {
		t.Errorf("cache hit took %v, want < 1s", took)
	}
}
