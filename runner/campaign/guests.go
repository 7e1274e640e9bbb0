package campaign

import (
	"context"
	"fmt"
	"io"

	"napilab/images"
	"napilab/kernels"
	"napilab/results"
	"napilab/runner"
	"napilab/scenarios"
)

// BuildKernel builds the spec at kpath as flavour fl (at commit when set),
// printing its progress to log: lab's build, with its progress printer.
type BuildKernel func(ctx context.Context, kpath, commit string, fl kernels.Flavour, opts kernels.Options, log io.Writer) (*kernels.Artifact, *kernels.Spec, error)

// Guests builds, once each, what a run boots: the kernel of a spec and the
// image. Scenarios with kselftest steps get the kernel with the collections'
// config merged and the Debian image holding that kernel's selftests.
type Guests struct {
	CacheDir  string
	MakeJobs  int
	Flavour   kernels.Flavour // --flavour: every kernel is built so
	Log       io.Writer
	CacheOnly bool     // use cached kernels only, building none (lab repro)
	Commit    string   // build a tree or git base at this commit (lab repro)
	Nice      int      // builds' niceness (kernels.Options.Nice): lab run's guests beside them come first
	NoCover   bool     // count no calls of the series' functions (lab run --no-cover)
	CoverFns  []string // count these functions' calls instead of the series' (lab run --cover)

	build  BuildKernel
	agent  *images.Image // the agent-only image, built on first use
	cache  map[string]Guest
	failed map[string]error // kernel builds that failed, by spec and flavour
	held   []*images.Image  // Debian images held until the runs are done
}

// NewGuests returns the guests built in cacheDir, their kernels by build.
func NewGuests(cacheDir string, makeJobs int, log io.Writer, build BuildKernel) *Guests {
	return &Guests{CacheDir: cacheDir, MakeJobs: makeJobs, Log: log, build: build, cache: map[string]Guest{}, failed: map[string]error{}}
}

// Release drops the holds on the Debian images built, letting prunes remove them.
func (gs *Guests) Release() {
	for _, img := range gs.held {
		img.Release()
	}
	gs.held = nil
}

// Guest is a built kernel and image: the run configuration they give and
// the kselftests ("net:veth.sh") the image holds.
type Guest struct {
	Cfg   runner.Config
	Tests []string
}

// Config returns the kernel- and image-derived part of a run's
// configuration for the spec at kpath and a scenario needing the tests
// (collection:test names; none for the agent-only image).
func (gs *Guests) Config(ctx context.Context, kpath string, s *scenarios.Scenario) (runner.Config, error) {
	debian, fl := gs.need(s)
	gu, err := gs.Build(ctx, kpath, debian, fl)
	if err != nil || !debian {
		return gu.Cfg, err
	}
	return gu.Cfg, gu.check(s.Kselftests())
}

// need says which guest the scenario boots: the Debian image or the
// agent-only one, and the kernel's flavour (--flavour, debug if the
// scenario asks for it, its kselftest collections' config).
func (gs *Guests) need(s *scenarios.Scenario) (debian bool, fl kernels.Flavour) {
	fl = gs.Flavour
	if s.Machine.Flavour == scenarios.FlavourDebug {
		fl.Debug = true
	}
	if !s.NeedsDebian() {
		return false, fl
	}
	return true, fl.Join(kernels.Flavour{Selftests: s.KselftestCollections()})
}

// GuestKey names the guest the scenario boots, for grouping runs by what
// they need built; "" is the plain one (the spec as --flavour builds it,
// the agent-only image).
func (gs *Guests) GuestKey(s *scenarios.Scenario) string {
	debian, fl := gs.need(s)
	if !debian && fl.String() == gs.Flavour.String() {
		return ""
	}
	return fmt.Sprintf("%v %s", debian, fl)
}

// Build builds (once) a guest with the agent-only or the Debian image, the
// latter holding the flavour's kselftest collections.
func (gs *Guests) Build(ctx context.Context, kpath string, debian bool, fl kernels.Flavour) (Guest, error) {
	key := fmt.Sprintf("%s\x00%v\x00%s", kpath, debian, fl)
	if gu, ok := gs.cache[key]; ok {
		return gu, nil
	}
	gu, err := gs.buildGuest(ctx, kpath, debian, fl)
	if err != nil {
		return Guest{}, err
	}
	gs.cache[key] = gu
	return gu, nil
}

// buildGuest builds what Build returns: the kernel and the image. The
// agent-only image compiles beside the kernel's build (on a cold machine
// ~30 s of go build that would otherwise come after it, before the first
// run); it is waited for before buildGuest returns.
func (gs *Guests) buildGuest(ctx context.Context, kpath string, debian bool, fl kernels.Flavour) (Guest, error) {
	var agent *images.Image
	var agentErr error
	agentDone := make(chan struct{})
	if !debian && gs.agent == nil {
		go func() {
			defer close(agentDone)
			agent, agentErr = images.Build(ctx, images.Options{CacheDir: gs.CacheDir})
		}()
	} else {
		close(agentDone)
	}
	kern, spec, err := gs.Kernel(ctx, kpath, fl)
	<-agentDone
	if agent != nil {
		gs.agent = agent
	}
	if err != nil {
		return Guest{}, err
	}
	var gu Guest
	if debian {
		gu, err = gs.debian(ctx, kpath, spec, kern)
	} else if gs.agent == nil {
		err = agentErr
	} else {
		gu.Cfg = GuestConfig(kpath, spec, kern, gs.agent)
	}
	if err == nil && !gs.NoCover {
		err = gs.cover(ctx, &gu.Cfg, spec, kern)
	}
	return gu, err
}

// cover sets the functions whose calls every run counts: those named by
// --cover, or the kernel's series'; a series the lab cannot read counts none
// and says why.
func (gs *Guests) cover(ctx context.Context, cfg *runner.Config, spec *kernels.Spec, kern *kernels.Artifact) error {
	if len(gs.CoverFns) > 0 {
		named, err := kernels.NamedFunctions(kern, gs.CoverFns)
		for _, c := range named {
			cfg.Cover = append(cfg.Cover, results.CoverFunc{Func: c.Func, Probes: c.Probes, Via: c.Via})
		}
		return err
	}
	changed, err := kernels.SeriesFunctions(ctx, spec, kern, gs.CacheDir)
	if err != nil {
		fmt.Fprintf(gs.Log, "%s: the series' functions are not counted: %v\n", spec.Name, err)
		return nil
	}
	for _, c := range changed {
		cfg.Cover = append(cfg.Cover, results.CoverFunc{Func: c.Func, Probes: c.Probes, Via: c.Via})
	}
	return nil
}

// Kernel builds the spec at kpath as flavour fl. A build that failed is
// not tried again (lab run: each scenario on the kernel is an ERROR at once).
func (gs *Guests) Kernel(ctx context.Context, kpath string, fl kernels.Flavour) (*kernels.Artifact, *kernels.Spec, error) {
	key := fmt.Sprintf("%s\x00%s", kpath, fl)
	if err := gs.failed[key]; err != nil {
		return nil, nil, err
	}
	kern, spec, err := gs.build(ctx, kpath, gs.Commit, fl, kernels.Options{Jobs: gs.MakeJobs, CacheOnly: gs.CacheOnly, Nice: gs.Nice}, gs.Log)
	if err != nil && ctx.Err() == nil { // an interrupted build says nothing of the next try
		gs.failed[key] = err
	}
	return kern, spec, err
}
