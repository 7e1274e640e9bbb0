package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"napilab/internal/wire"
	"napilab/results"
)

// setupProbes attaches the scenario's race-widening probes, seeded by the
// run's seed. A probe the kernel refuses (a symbol it lacks or cannot
// probe) is the scenario's problem on this kernel: an ERROR naming it. A
// registration past setupLimit is a hang, FAIL or ERROR by judgeHang.
func (r *run) setupProbes(ctx context.Context, seed int64) error {
	if len(r.s.Inject) == 0 {
		return nil
	}
	in := wire.Inject{Seed: seed}
	for _, p := range r.s.Inject {
		in.Probes = append(in.Probes, wire.Probe{Name: p.Name, At: p.At, Return: p.On == "return", Delay: p.Delay.D(),
			Probability: *p.Probability, Count: p.Count, Armed: *p.Armed})
	}
	line := r.s.Inject[0].Pos.Line
	err := r.boundedCall(ctx, injectStep, line, r.setupLimit(), wire.OpInject, in, nil)
	var h *hangError
	switch {
	case errors.As(err, &h):
		return h // a kernel stuck registering a probe: judged by its evidence
	case err != nil:
		return infra("inject (%s line %d): %v", r.s.Path, line, err)
	}
	return nil
}

// injectStep names the probes' registration where a step name is expected.
const injectStep = "inject probes"

// injections reads the probes' counters from the last snapshot that has them.
func (t *timeline) injections() []results.Injection {
	if len(t.s.Inject) == 0 {
		return nil
	}
	t.mu.Lock()
	var text string
	final := false // read after the timeline, not only before it
	for i := len(t.samples) - 1; i >= 0; i-- {
		if v, ok := t.samples[i].Data.Values[wire.SourceInject]; ok {
			text, final = v, t.final > 0 && t.samples[i].Host == t.final
			break
		}
	}
	t.mu.Unlock()
	counts := map[string][2]uint64{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		hits, herr := strconv.ParseUint(f[1], 10, 64)
		fired, ferr := strconv.ParseUint(f[2], 10, 64)
		if herr == nil && ferr == nil {
			counts[f[0]] = [2]uint64{hits, fired}
		}
	}
	var out []results.Injection
	for _, p := range t.s.Inject {
		c, ok := counts[p.Name]
		in := results.Injection{Name: p.Name, At: p.At, On: p.On, Delay: p.Delay.D().String(),
			Probability: *p.Probability, Hits: c[0], Fired: c[1], Line: p.Pos.Line}
		switch {
		case !ok:
			in.Warning = "the lab could not read this probe's counters"
		case !final:
			in.Warning = "counted before the timeline ended (the guest stopped answering): the counts are a lower bound"
		case c[0] == 0:
			in.Warning = fmt.Sprintf("%s never ran: the function is not on the path this scenario drives", p.At)
		case c[1] == 0:
			in.Warning = "the probe never fired (not armed when the function ran, or probability too low)"
		}
		out = append(out, in)
	}
	return out
}
