package campaign

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"napilab/images"
	"napilab/kernels"
)

// DebianMemoryMB is the least guest RAM for the Debian image: the unpacked
// tree and the archive both sit in memory while the kernel unpacks it.
const DebianMemoryMB = 1024

// debian builds the kernel's selftests (when its spec names collections)
// and the Debian image holding them.
func (gs *Guests) debian(ctx context.Context, kpath string, spec *kernels.Spec, kern *kernels.Artifact) (Guest, error) {
	var st *kernels.Selftests
	stDir := ""
	if colls := spec.Config.Selftests; len(colls) > 0 {
		start := time.Now()
		var err error
		st, err = kernels.BuildSelftests(ctx, spec, kern, kernels.Options{CacheDir: gs.CacheDir, Jobs: gs.MakeJobs, Nice: gs.Nice})
		if err != nil {
			return Guest{}, fmt.Errorf("kselftests of %s: %w", spec.Name, err)
		}
		fmt.Fprintf(gs.Log, "kselftests %s of %s: %s in %.1fs, %d tests\n", strings.Join(colls, ","), spec.Name,
			cachedWord(st.Cached), time.Since(start).Seconds(), len(st.Tests))
		for prog, why := range st.NotBuilt {
			fmt.Fprintf(gs.Log, "  %s did not compile on this host and will skip: %s\n", prog, why)
		}
		for _, a := range st.Added {
			fmt.Fprintf(gs.Log, "  installed %s: the collection's Makefile leaves it out\n", a)
		}
		stDir = st.Dir
	}
	start := time.Now()
	img, rootfs, err := images.BuildGuestImage(ctx, images.Options{CacheDir: gs.CacheDir, Wait: func(msg string) { fmt.Fprintln(gs.Log, "  "+msg) }}, images.DefaultDebian(), kern.Dir, stDir)
	if err != nil {
		return Guest{}, err
	}
	gs.held = append(gs.held, img)
	fmt.Fprintf(gs.Log, "debian image: %s in %.1fs, %d MB (rootfs %s)\n", cachedWord(img.Cached && rootfs.Cached),
		time.Since(start).Seconds(), img.Size>>20, rootfs.Path)
	gu := Guest{Cfg: GuestConfig(kpath, spec, kern, img)}
	gu.Cfg.MinMemoryMB = DebianMemoryMB
	if st != nil {
		gu.Cfg.KselftestTimeouts = map[string]time.Duration{}
		for _, c := range st.Collections {
			gu.Cfg.KselftestTimeouts[c] = st.Timeout(c)
		}
		gu.Tests = st.Tests
	}
	return gu, nil
}

// check refuses tests the guest's kselftests do not have, before booting.
func (gu Guest) check(tests []string) error {
	var missing []string
	for _, t := range tests {
		if !slices.Contains(gu.Tests, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kernel %s has no kselftest %s (lab kselftest --list -k SPEC lists them)",
			gu.Cfg.Kernel.Spec, strings.Join(missing, ", "))
	}
	return nil
}

func cachedWord(cached bool) string {
	if cached {
		return "cached"
	}
	return "built"
}
