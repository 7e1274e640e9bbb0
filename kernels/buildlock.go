package kernels

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Key lock kinds (see lock.go).
const (
	kernelKey    = "kernel"
	srcKey       = "src"
	selftestsKey = "selftests"
)

// waitReport passes what a lock waits for on as a progress report.
func (b *builder) waitReport(msg string) { b.report(PhaseWait, 0, msg) }

// lockBuild takes what a build holds (see lock.go): the cache lock shared,
// the spec's key, and for a variant its base's key shared, after which the
// plan is checked again: the base may have been rebuilt meanwhile. Callers
// must call release.
func (b *builder) lockBuild(ctx context.Context) (release func(), err error) {
	var held []func()
	release = func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	steps := []func() (func(), error){
		func() (func(), error) { return b.layout.shareCache(ctx, b.waitReport) },
		func() (func(), error) {
			return b.layout.lockKey(ctx, kernelKey, b.spec.Name, "being built", false, b.waitReport)
		},
	}
	if b.plan != nil {
		steps = append(steps, func() (func(), error) {
			return b.layout.lockKey(ctx, kernelKey, b.plan.Base, "serving as the base of "+b.spec.Name, true, b.waitReport)
		})
	}
	for _, take := range steps {
		unlock, err := take()
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, unlock)
	}
	if b.plan != nil {
		if note := b.plan.recheck(); note != "" {
			b.plan = nil
			b.notes = append(b.notes, note)
			held[len(held)-1]() // the base is not used
			held = held[:len(held)-1]
		}
	}
	return release, nil
}

// recheck looks at the base's work dir again under its lock and takes its
// current build time; a work dir no longer built from the planned source
// means a full build, which the note says.
func (p *reusePlan) recheck() string {
	link, _ := os.Readlink(filepath.Join(p.BaseWork, "source"))
	fi, err := os.Stat(filepath.Join(p.BaseWork, "vmlinux"))
	if err != nil || !workBuilt(p.BaseWork) || link != p.SourceAt {
		return fmt.Sprintf("base %s changed while this build waited for it; full build", p.Base)
	}
	p.BaseBuild = fi.ModTime().UnixNano()
	return ""
}

// waitFunc passes what a lock waits for on to opts.Progress, as spec's
// report; nil when no one listens.
func waitFunc(opts Options, spec string) func(string) {
	if opts.Progress == nil {
		return nil
	}
	return func(msg string) { opts.Progress(Progress{Spec: spec, Phase: PhaseWait, Line: msg}) }
}
