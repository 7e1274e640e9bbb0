package kernels

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVariantRebuildIsIncremental builds a one-line variant of stock-6.1 in
// the real cache and checks that it starts from stock's build: only a few
// objects compile. It removes everything the variant created.
func TestVariantRebuildIsIncremental(t *testing.T) {
	skipUnlessRealBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	stock, spec, l := testVariant(t)
	logPhases := func(p Progress) {
		if p.Phase != PhaseCompile && p.Phase != PhaseLink || strings.HasPrefix(p.Line, "  CC ") {
			t.Logf("%6.1fs %-10s %-8s objects=%d %s", p.Elapsed.Seconds(), p.Spec, p.Phase, p.Objects, p.Line)
		}
	}
	opts := Options{CacheDir: l.root, Progress: logPhases}

	// The base first (a cache hit when stock is built), so the clock below times the variant only.
	base, err := Build(ctx, stock, opts)
	if err != nil {
		t.Fatal(err)
	}
	stockVmlinux := filepath.Join(l.workDir(stock.Name), "vmlinux")
	before, _ := os.Stat(stockVmlinux)
	t.Cleanup(func() { removeVariant(t, l, spec) })

	start := time.Now()
	a, err := Build(ctx, spec, opts)
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("variant %s: wall %.1fs, %d objects compiled, reuses %q, bzImage %d bytes, patches %q, note %q",
		spec.Name, wall.Seconds(), a.Info.Objects, a.Info.Reuses, a.Info.BzImageSize, a.Info.PatchResults, a.Info.Note)
	if a.Cached || a.Info.Reuses != stock.Name {
		t.Errorf("variant cached=%v reuses=%q, want a build on top of %s (note %q)", a.Cached, a.Info.Reuses, stock.Name, a.Info.Note)
	}
	if a.Info.Objects >= 20 {
		t.Errorf("variant compiled %d objects, want < 20: the base's build was not reused", a.Info.Objects)
	}
	stockImage, _ := os.ReadFile(base.BzImage)
	variantImage, _ := os.ReadFile(a.BzImage)
	if len(variantImage) == 0 || bytes.Equal(stockImage, variantImage) {
		t.Errorf("variant bzImage (%d bytes) does not differ from stock's", len(variantImage))
	}
	stockObj, _ := os.ReadFile(filepath.Join(l.workDir(stock.Name), "net/core/dev.o"))
	variantObj, _ := os.ReadFile(filepath.Join(l.workDir(spec.Name), "net/core/dev.o"))
	if len(variantObj) == 0 || bytes.Equal(stockObj, variantObj) {
		t.Error("net/core/dev.o was not rebuilt from the patched dev.c")
	}
	// The base's tree and build are untouched.
	pristine, _ := os.ReadFile(filepath.Join(l.pristineDir(stock.Base.Tarball, base.Info.BaseSHA256), "net/core/dev.c"))
	if bytes.Contains(pristine, []byte("napilab: a one-line variant")) {
		t.Error("the patch leaked into the pristine source")
	}
	if after, _ := os.Stat(stockVmlinux); before == nil || after == nil || !after.ModTime().Equal(before.ModTime()) {
		t.Error("the base's work dir was rebuilt")
	}
}

// testVariant returns stock-6.1 and a one-line variant of it under a name
// no shipped spec uses, so tests never touch a real variant's files.
func testVariant(t testing.TB) (stock, variant *Spec, l layout) {
	t.Helper()
	l = layout{DefaultCacheDir()}
	stockPath, _ := filepath.Abs("stock-6.1.yaml")
	patchPath, _ := filepath.Abs("testdata/variant-dev-comment.patch")
	stock, err := LoadSpec(stockPath)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("test-variant-%d", os.Getpid())
	specPath := filepath.Join(t.TempDir(), name+".yaml")
	yaml := fmt.Sprintf("name: %s\nextends: %s\npatches: [%s]\n", name, stockPath, patchPath)
	if err := os.WriteFile(specPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	variant, err = LoadSpec(specPath)
	if err != nil {
		t.Fatal(err)
	}
	return stock, variant, l
}

// BenchmarkVariantRebuild: wall time to build a one-line variant of
// stock-6.1 on top of stock's build (patch, compile, link, compress), each
// iteration from scratch. It builds kernels: skipped unless
// NAPILAB_BENCH_BUILD=1.
func BenchmarkVariantRebuild(b *testing.B) {
	if os.Getenv("NAPILAB_BENCH_BUILD") != "1" {
		b.Skip("builds a kernel: set NAPILAB_BENCH_BUILD=1")
	}
	if _, err := os.Stat("/usr/src/linux-source-6.1.tar.xz"); err != nil {
		b.Skip("needs /usr/src/linux-source-6.1.tar.xz (apt-get install linux-source-6.1)")
	}
	ctx := context.Background()
	stock, spec, l := testVariant(b)
	opts := Options{CacheDir: l.root}
	if _, err := Build(ctx, stock, opts); err != nil { // a cache hit when stock is built
		b.Fatal(err)
	}
	var wall time.Duration
	objects := 0
	for i := 0; i < b.N; i++ {
		start := time.Now()
		a, err := Build(ctx, spec, opts)
		wall += time.Since(start)
		removeVariant(b, l, spec)
		if err != nil {
			b.Fatal(err)
		}
		objects += a.Info.Objects
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "rebuild-s")
	b.ReportMetric(float64(objects)/float64(b.N), "objects")
}

// removeVariant deletes what building spec created: work dir, patched source, artifact, index entry.
func removeVariant(t testing.TB, l layout, spec *Spec) {
	t.Helper()
	in, err := resolveInputs(context.Background(), l, spec)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	paths := []string{l.workDir(spec.Name), l.sourceDir(spec, in), filepath.Join(l.indexDir(), in.hash()+".json")}
	arts, _ := filepath.Glob(filepath.Join(l.kernelsDir(), spec.Name+"-*"))
	for _, p := range append(paths, arts...) {
		if err := os.RemoveAll(p); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}
