package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"napilab/images"
	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// debianMemoryMB is the least guest RAM for the Debian image: the unpacked
// tree and the archive both sit in memory while the kernel unpacks it.
const debianMemoryMB = 1024

// guests builds, once each, what a run boots: the kernel of a spec and the
// image. Scenarios with kselftest steps get the kernel with the collections'
// config merged and the Debian image holding that kernel's selftests.
type guests struct {
	g         *globalOptions
	makeJobs  int
	flavour   kernels.Flavour // --flavour: every kernel is built so
	log       io.Writer
	agent     *images.Image // the agent-only image, built on first use
	cache     map[string]guest
	failed    map[string]error // kernel builds that failed, by spec and flavour
	held      []*images.Image  // Debian images held until the runs are done
	cacheOnly bool             // use cached kernels only, building none (lab repro)
	commit    string           // build a tree or git base at this commit (lab repro)
	nice      int              // builds' niceness (kernels.Options.Nice): lab run's guests beside them come first
	noCover   bool             // count no calls of the series' functions (lab run --no-cover)
	coverFns  []string         // count these functions' calls instead of the series' (lab run --cover)
}

// release drops the holds on the Debian images built, letting prunes remove them.
func (gs *guests) release() {
	for _, img := range gs.held {
		img.Release()
	}
	gs.held = nil
}

// guest is a built kernel and image: the run configuration they give and
// the kselftests ("net:veth.sh") the image holds.
type guest struct {
	cfg   runner.Config
	tests []string
}

func newGuests(g *globalOptions, makeJobs int, log io.Writer) *guests {
	return &guests{g: g, makeJobs: makeJobs, log: log, cache: map[string]guest{}, failed: map[string]error{}}
}

// config returns the kernel- and image-derived part of a run's
// configuration for the spec at kpath and a scenario needing the tests
// (collection:test names; none for the agent-only image).
func (gs *guests) config(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error) {
	debian, fl := gs.need(s)
	gu, err := gs.build(ctx, kpath, debian, fl)
	if err != nil || !debian {
		return gu.cfg, err
	}
	return gu.cfg, gu.check(s.Kselftests())
}

// need says which guest the scenario boots: the Debian image or the
// agent-only one, and the kernel's flavour (--flavour, debug if the
// scenario asks for it, its kselftest collections' config).
func (gs *guests) need(s *scenarios.Scenario) (debian bool, fl kernels.Flavour) {
	fl = gs.flavour
	if s.Machine.Flavour == scenarios.FlavourDebug {
		fl.Debug = true
	}
	if !s.NeedsDebian() {
		return false, fl
	}
	return true, fl.Join(kernels.Flavour{Selftests: s.KselftestCollections()})
}

// guestKey names the guest the scenario boots, for grouping runs by what
// they need built; "" is the plain one (the spec as --flavour builds it,
// the agent-only image).
func (gs *guests) guestKey(s *scenarios.Scenario) string {
	debian, fl := gs.need(s)
	if !debian && fl.String() == gs.flavour.String() {
		return ""
	}
	return fmt.Sprintf("%v %s", debian, fl)
}

// build builds (once) a guest with the agent-only or the Debian image, the
// latter holding the flavour's kselftest collections.
func (gs *guests) build(ctx context.Context, kpath string, debian bool, fl kernels.Flavour) (guest, error) {
	key := fmt.Sprintf("%s\x00%v\x00%s", kpath, debian, fl)
	if gu, ok := gs.cache[key]; ok {
		return gu, nil
	}
	gu, err := gs.buildGuest(ctx, kpath, debian, fl)
	if err != nil {
		return guest{}, err
	}
	gs.cache[key] = gu
	return gu, nil
}

// buildGuest builds what build returns: the kernel and the image. The
// agent-only image compiles beside the kernel's build (on a cold machine
// ~30 s of go build that would otherwise come after it, before the first
// run); it is waited for before buildGuest returns.
func (gs *guests) buildGuest(ctx context.Context, kpath string, debian bool, fl kernels.Flavour) (guest, error) {
	var agent *images.Image
	var agentErr error
	agentDone := make(chan struct{})
	if !debian && gs.agent == nil {
		go func() {
			defer close(agentDone)
			agent, agentErr = images.Build(ctx, images.Options{CacheDir: gs.g.cache()})
		}()
	} else {
		close(agentDone)
	}
	kern, spec, err := gs.kernel(ctx, kpath, fl)
	<-agentDone
	if agent != nil {
		gs.agent = agent
	}
	if err != nil {
		return guest{}, err
	}
	var gu guest
	if debian {
		gu, err = gs.debian(ctx, kpath, spec, kern)
	} else if gs.agent == nil {
		err = agentErr
	} else {
		gu.cfg = guestConfig(kpath, spec, kern, gs.agent)
	}
	if err == nil && !gs.noCover {
		err = gs.cover(ctx, &gu.cfg, spec, kern)
	}
	return gu, err
}

// cover sets the functions whose calls every run counts: those named by
// --cover, or the kernel's series'; a series the lab cannot read counts none
// and says why.
func (gs *guests) cover(ctx context.Context, cfg *runner.Config, spec *kernels.Spec, kern *kernels.Artifact) error {
	if len(gs.coverFns) > 0 {
		named, err := kernels.NamedFunctions(kern, gs.coverFns)
		for _, c := range named {
			cfg.Cover = append(cfg.Cover, results.CoverFunc{Func: c.Func, Probes: c.Probes, Via: c.Via})
		}
		return err
	}
	changed, err := kernels.SeriesFunctions(ctx, spec, kern, gs.g.cache())
	if err != nil {
		fmt.Fprintf(gs.log, "%s: the series' functions are not counted: %v\n", spec.Name, err)
		return nil
	}
	for _, c := range changed {
		cfg.Cover = append(cfg.Cover, results.CoverFunc{Func: c.Func, Probes: c.Probes, Via: c.Via})
	}
	return nil
}

// kernel builds the spec at kpath as flavour fl. A build that failed is
// not tried again (lab run: each scenario on the kernel is an ERROR at once).
func (gs *guests) kernel(ctx context.Context, kpath string, fl kernels.Flavour) (*kernels.Artifact, *kernels.Spec, error) {
	key := fmt.Sprintf("%s\x00%s", kpath, fl)
	if err := gs.failed[key]; err != nil {
		return nil, nil, err
	}
	kern, spec, err := buildPinned(ctx, gs.g, kpath, gs.commit, fl, kernels.Options{Jobs: gs.makeJobs, CacheOnly: gs.cacheOnly, Nice: gs.nice}, progressWriter(gs.log, false))
	if err != nil && ctx.Err() == nil { // an interrupted build says nothing of the next try
		gs.failed[key] = err
	}
	return kern, spec, err
}

// debian builds the kernel's selftests (when its spec names collections)
// and the Debian image holding them.
func (gs *guests) debian(ctx context.Context, kpath string, spec *kernels.Spec, kern *kernels.Artifact) (guest, error) {
	var st *kernels.Selftests
	stDir := ""
	if colls := spec.Config.Selftests; len(colls) > 0 {
		start := time.Now()
		var err error
		st, err = kernels.BuildSelftests(ctx, spec, kern, kernels.Options{CacheDir: gs.g.cache(), Jobs: gs.makeJobs, Nice: gs.nice})
		if err != nil {
			return guest{}, fmt.Errorf("kselftests of %s: %w", spec.Name, err)
		}
		fmt.Fprintf(gs.log, "kselftests %s of %s: %s in %.1fs, %d tests\n", strings.Join(colls, ","), spec.Name,
			cachedWord(st.Cached), time.Since(start).Seconds(), len(st.Tests))
		for prog, why := range st.NotBuilt {
			fmt.Fprintf(gs.log, "  %s did not compile on this host and will skip: %s\n", prog, why)
		}
		for _, a := range st.Added {
			fmt.Fprintf(gs.log, "  installed %s: the collection's Makefile leaves it out\n", a)
		}
		stDir = st.Dir
	}
	start := time.Now()
	img, rootfs, err := images.BuildGuestImage(ctx, images.Options{CacheDir: gs.g.cache(), Wait: func(msg string) { fmt.Fprintln(gs.log, "  "+msg) }}, images.DefaultDebian(), kern.Dir, stDir)
	if err != nil {
		return guest{}, err
	}
	gs.held = append(gs.held, img)
	fmt.Fprintf(gs.log, "debian image: %s in %.1fs, %d MB (rootfs %s)\n", cachedWord(img.Cached && rootfs.Cached),
		time.Since(start).Seconds(), img.Size>>20, rootfs.Path)
	gu := guest{cfg: guestConfig(kpath, spec, kern, img)}
	gu.cfg.MinMemoryMB = debianMemoryMB
	if st != nil {
		gu.cfg.KselftestTimeouts = map[string]time.Duration{}
		for _, c := range st.Collections {
			gu.cfg.KselftestTimeouts[c] = st.Timeout(c)
		}
		gu.tests = st.Tests
	}
	return gu, nil
}

// forKernel returns the scenario with the parameters its flavours: block
// sets for the flavour the kernel of cfg was built as (the user's params win).
func forKernel(cfg runner.Config, s *scenarios.Scenario, params map[string]string) (*scenarios.Scenario, map[string]string, error) {
	fl, err := kernels.ParseFlavour(cfg.Kernel.Flavour)
	if err != nil || !fl.Debug {
		return s, params, err
	}
	return s.ForFlavour(scenarios.FlavourDebug, params)
}

// skippedOn says why the scenario does not run on the flavour of cfg's kernel.
func skippedOn(cfg runner.Config, s *scenarios.Scenario) string {
	if fl, _ := kernels.ParseFlavour(cfg.Kernel.Flavour); fl.Debug {
		return s.SkippedOn(scenarios.FlavourDebug)
	}
	return ""
}

// check refuses tests the guest's kselftests do not have, before booting.
func (gu guest) check(tests []string) error {
	var missing []string
	for _, t := range tests {
		if !slices.Contains(gu.tests, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kernel %s has no kselftest %s (lab kselftest --list -k SPEC lists them)",
			gu.cfg.Kernel.Spec, strings.Join(missing, ", "))
	}
	return nil
}

func cachedWord(cached bool) string {
	if cached {
		return "cached"
	}
	return "built"
}
