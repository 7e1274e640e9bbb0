package runner

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"time"

	"napilab/images/wire"
	"napilab/results"
)

// setupStep names the topology setup where a step name is expected.
const setupStep = "topology setup"

// kmemleakTimeout bounds the kmemleak request: two scans of a debug guest's
// memory under TCG (~5 s each measured) around kmemleak's 5 s minimum age.
const kmemleakTimeout = 2 * time.Minute

// leakCheck is the end-of-timeline kmemleak scan of a debug kernel.
type leakCheck struct {
	err    error           // the scan failed: leaks not measured
	leaks  []results.Splat // grouped by title, placed where allocated
	before int             // objects allocated before the topology setup (boot)
}

// kmemleakScan scans at the end of the timeline and keeps the leaks the run
// allocated: each object is dated by its allocation jiffies on the guest's
// clock, then on the host's, and placed on the step it was allocated in.
// Objects from before the topology setup (the kernel's boot) are counted,
// not reported: they are not the scenario's. The report is kmemleak.txt.
func (r *run) kmemleakScan(ctx context.Context) {
	if r.hello == nil || !r.hello.Kmemleak {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, kmemleakTimeout)
	defer cancel()
	var rep wire.KmemleakReport
	if r.leak.err = r.ctl.call(cctx, wire.OpKmemleak, nil, &rep); r.leak.err != nil {
		return
	}
	r.res.Timings.Kmemleak = math.Round(rep.Seconds*100) / 100
	report := wire.Clip(rep.Report)
	if report != "" {
		os.WriteFile(filepath.Join(r.cfg.OutDir, "kmemleak.txt"), []byte(report), 0o644)
	}
	var leaks []results.Splat
	for _, l := range results.ParseKmemleak([]byte(report)) {
		up, ok := rep.Uptime(l.Jiffies)
		at := r.readyAt.Add(time.Duration((up - r.hello.Uptime) * float64(time.Second)))
		if ok && at.Before(r.setupAt) {
			r.leak.before++
			continue
		}
		sp := l.Splat
		if ok {
			r.placeAt(&sp, at)
		}
		leaks = append(leaks, sp)
	}
	r.leak.leaks = results.GroupSplats(leaks)
	r.cfg.Logf("kmemleak: %d objects leaked by the run (%d titles), %d at boot (scans %.1fs)",
		len(leaks), len(r.leak.leaks), r.leak.before, rep.Seconds)
}

// placeAt names the innermost step running at host time at, or the
// topology setup when it was before the timeline.
func (r *run) placeAt(sp *results.Splat, at time.Time) {
	if r.tl == nil {
		return
	}
	if !r.setupAt.IsZero() && !at.Before(r.setupAt) && at.Before(r.tl.start) {
		sp.Step, sp.Offset = setupStep, math.Round(at.Sub(r.setupAt).Seconds()*100)/100
		return
	}
	var best *span
	for i := range r.tl.spans {
		s := &r.tl.spans[i]
		if !at.Before(s.start) && !at.After(s.end) && (best == nil || s.start.After(best.start)) {
			best = s
		}
	}
	if best != nil {
		sp.Step, sp.Offset = best.name, math.Round(at.Sub(best.start).Seconds()*100)/100
	}
}
