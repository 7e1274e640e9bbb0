package campaign

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"napilab/kernels"
	"napilab/patches"
	"napilab/results"
	"napilab/runner"
)

// seriesCandidates are the prefixes of a series.
type seriesCandidates struct{ series *patches.Series }

func (c seriesCandidates) count() int         { return len(c.series.Patches) }
func (c seriesCandidates) label(k int) string { return fmt.Sprintf("patches 1..%d", k) }
func (c seriesCandidates) print(w io.Writer, res runner.BisectResult) {
	printBisect(w, c.series, res)
}

// Series bisects the prefixes of the series at seriesPath on the kernel
// spec at kpath, in a bisect folder under out.
func (b *Bisector) Series(ctx context.Context, kpath, seriesPath, out string, stdout io.Writer) error {
	base, err := kernels.LoadSpec(kpath)
	if err != nil {
		return err
	}
	series, err := patches.Load(seriesPath)
	if err != nil {
		return err
	}
	b.specPath = kpath
	// One file per patch, so a prefix is a list of files whatever the format.
	dir := filepath.Join(b.CacheDir, "bisect", series.Hash()[:12])
	var files []string
	for i, p := range series.Patches {
		f := filepath.Join(dir, fmt.Sprintf("%04d.patch", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, p.Diff, 0o644); err != nil {
			return err
		}
		files = append(files, f)
	}
	if b.out, err = results.NewRunDir(out, "bisect-"+b.Scenario.Name+"-"+base.Name); err != nil {
		return err
	}
	c := seriesCandidates{series}
	// build builds base plus patches 1..k; nil, nil when it does not build (a skip).
	build := func(k int) (*kernels.Spec, *kernels.Artifact, error) {
		v := *base
		v.Name = fmt.Sprintf("%s-bisect-%s-%d", base.Name, series.Hash()[:8], k)
		v.Patches = append(append([]string{}, base.Patches...), files[:k]...)
		v.Extends = base.Path
		spec := &v
		if k == 0 {
			spec = base
		}
		a, err := b.build(ctx, c.label(k), spec)
		if a == nil {
			return nil, nil, err
		}
		return spec.Flavoured(b.Flavour), a, nil
	}
	k := func(k int) string { return fmt.Sprintf("k%d", k) }
	return b.bisect(ctx, c, "series", build, k, k, stdout)
}

// printBisect says which patch is the first bad one, or which patches may
// be when skipped prefixes (kernels that did not build or boot) hide it.
func printBisect(w io.Writer, series *patches.Series, res runner.BisectResult) {
	n := len(series.Patches)
	if res.First == res.Last {
		p := series.Patches[res.First-1]
		fmt.Fprintf(w, "first bad patch: %d/%d %q by %s\n", res.First, n, p.Subject, p.Author)
	} else {
		fmt.Fprintf(w, "first bad patch: one of %d..%d of %d (the prefixes between could not be tested):\n", res.First, res.Last, n)
		for k := res.First; k <= res.Last; k++ {
			p := series.Patches[k-1]
			fmt.Fprintf(w, "  %d/%d %q by %s\n", k, n, p.Subject, p.Author)
		}
	}
	if len(res.Skipped) > 0 {
		fmt.Fprintf(w, "skipped (did not build or boot): patches 1..%s\n", joinInts(res.Skipped))
	}
}

func joinInts(ks []int) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = strconv.Itoa(k)
	}
	return strings.Join(s, ", 1..")
}
