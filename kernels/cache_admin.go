package kernels

import (
	"context"
	"strings"
)

// Entry is one spec's line in List.
type Entry struct {
	// Spec is the spec listed.
	Spec *Spec
	// Extends is the name of the build it starts from (the base spec's, of
	// the same flavour), or empty.
	Extends string
	// Patches counts the patches the spec applies, its base's included.
	Patches int
	// Artifact is the artifact for the spec's current inputs, or nil when they are not built.
	Artifact *Artifact
	// Err says why the cache state could not be worked out, e.g. a missing tarball.
	Err error
}

// List reports, for each spec, its base, its patch count and whether the
// cache holds an artifact for its current inputs. It takes no lock and runs
// no make; per-spec problems land in Entry.Err.
func List(ctx context.Context, root string, specs []*Spec) ([]Entry, error) {
	l := layout{root}
	var out []Entry
	for _, spec := range specs {
		e := Entry{Spec: spec}
		if spec.Extends != "" {
			if base, err := LoadSpec(spec.Extends); err == nil {
				e.Extends = base.Name
			} else {
				e.Extends = spec.Extends
			}
		}
		if series, err := loadSeries(spec); err == nil {
			for _, s := range series {
				e.Patches += len(s.Patches)
			}
		}
		in, err := resolveInputs(ctx, l, spec)
		if err != nil {
			e.Err = err
		} else if a, ok := lookupIndex(l, in.hash()); ok {
			e.Artifact = a
		}
		out = append(out, e)
		if err != nil {
			continue
		}
		// The spec's usual flavours, when built: one line each.
		for _, fl := range listedFlavours {
			f := e
			f.Spec, f.Artifact = spec.Flavoured(fl), nil
			if f.Extends != "" {
				// On the base's build of the same flavour (planReuse).
				f.Extends += strings.TrimPrefix(f.Spec.Name, spec.Name)
			}
			if in, err := resolveInputs(ctx, l, f.Spec); err == nil {
				if a, ok := lookupIndex(l, in.hash()); ok {
					f.Artifact = a
					out = append(out, f)
				}
			}
		}
	}
	return out, nil
}

// listedFlavours are the flavours List shows when they are built.
var listedFlavours = []Flavour{{Debug: true}, {Selftests: []string{"net"}}, {Debug: true, Selftests: []string{"net"}}}

// GCOptions tune GC.
type GCOptions struct {
	// Keep is how many artifacts to keep per spec, newest index entry first,
	// besides the one its current inputs map to; less than 1 means 1.
	Keep int
	// DryRun reports what GC would remove without removing anything.
	DryRun bool
	// Progress, if set, receives what GC waits for (PhaseWait reports).
	Progress func(Progress)
}

// Removal is one path GC removed, or would remove in a dry run.
type Removal struct {
	// Path is the removed file or dir.
	Path string
	// Bytes is the disk space it freed: files still linked elsewhere do not count.
	Bytes int64
	// Why says why it went.
	Why string
}

// GC frees cache space, holding the cache lock exclusively: it waits for
// running builds (lock.go). It removes artifacts that are neither the
// current build of a spec nor among the Keep newest index entries of one
// and that no run holds (see Hold), index entries of removed
// artifacts, the work dirs and patched sources of specs not in specs,
// patched sources of older patch series, leftovers of interrupted
// builds, and scratch folders of dead processes (see TempPattern).
// Pristine sources, ccache and images stay. Pass every spec in use:
// the work dir of a spec GC is not told about is removed.
func GC(ctx context.Context, root string, specs []*Spec, opts GCOptions) (removed []Removal, freed int64, err error) {
	unlock, err := layout{root}.ownCache(ctx, "being cleaned up by lab kernel gc", waitFunc(Options{Progress: opts.Progress}, "gc"))
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	g := &collector{l: layout{root}, dryRun: opts.DryRun, names: map[string]bool{},
		keep: map[string]bool{}, currentSrc: map[string]string{}, gone: map[string]bool{}}
	for _, s := range specs {
		g.names[s.Name] = true
	}
	g.current(ctx, specs)
	g.newest(max(opts.Keep, 1))
	steps := []func() error{g.artifacts, g.index, g.workDirs, g.ccaches, g.sources, g.temps, g.notes}
	for _, step := range steps {
		if err := step(); err != nil {
			return g.removed, g.freed, err
		}
	}
	return g.removed, g.freed, nil
}
