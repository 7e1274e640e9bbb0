package runner

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"napilab/internal/wire"
	"napilab/results"
)

// coverStep names the cover probes' registration where a step name is expected.
const coverStep = "cover probes"

// probeSetup is what registering one probe may take: over 15 s on the 6.1
// debug flavour under TCG (see minSetupLimit), so lab explore's 9 probes
// there ran past the one minute every setup call gets (3 of 3 programs
// on regress-xps-map-leak-6.1.debug, with the host quiet).
const probeSetup = 20 * time.Second

// setupCover attaches a counting probe on every symbol Config.Cover names
// (the functions the kernel's series changes). A symbol the kernel refuses
// leaves its function uncounted, not an error; an agent that cannot set
// the probes up at all leaves the run without coverage.
func (r *run) setupCover(ctx context.Context) error {
	var syms []string
	for _, f := range r.cfg.Cover {
		for _, p := range f.Probes {
			if !slices.Contains(syms, p) {
				syms = append(syms, p)
			}
		}
	}
	if len(r.cfg.Cover) == 0 {
		return nil
	}
	var skipped []string
	if len(syms) > 0 {
		limit := max(r.setupLimit(), time.Duration(len(syms))*probeSetup)
		err := r.boundedCall(ctx, coverStep, 0, limit, wire.OpCover, wire.Cover{Funcs: syms}, &skipped)
		var h *hangError
		switch {
		case errors.As(err, &h):
			return h
		case err != nil:
			if r.cfg.Logf != nil {
				r.cfg.Logf("coverage: not counted: %v", err)
			}
			return nil
		}
	}
	r.cover = &results.Coverage{}
	for _, f := range r.cfg.Cover {
		fc := results.FuncCalls{CoverFunc: f}
		switch {
		case len(f.Probes) == 0:
			fc.Why = "inlined, and no caller of it has a symbol"
		default:
			for _, s := range skipped {
				if p, why, ok := strings.Cut(s, ": "); ok && slices.Contains(f.Probes, p) {
					fc.Why = "kprobes refused " + p + ": " + why
				}
			}
		}
		r.cover.Funcs = append(r.cover.Funcs, fc)
	}
	return nil
}

// coverage fills in the calls from the last snapshot that has them.
func (t *timeline) coverage(c *results.Coverage) *results.Coverage {
	if c == nil {
		return nil
	}
	t.mu.Lock()
	text, final := "", false
	for i := len(t.samples) - 1; i >= 0; i-- {
		if v, ok := t.samples[i].Data.Values[wire.SourceCover]; ok {
			text, final = v, t.final > 0 && t.samples[i].Host == t.final
			break
		}
	}
	t.mu.Unlock()
	calls := map[string]uint64{}
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				calls[f[0]] = n
			}
		}
	}
	out := &results.Coverage{Partial: !final}
	for _, f := range c.Funcs {
		if f.Counted() {
			f.Calls = 0
			for _, p := range f.Probes {
				f.Calls += calls[p]
			}
		}
		out.Funcs = append(out.Funcs, f)
	}
	return out
}
