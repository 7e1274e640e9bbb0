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

// kmemleakTimeout bounds one kmemleak request: a scan of a debug guest's
// memory under TCG, twice, around kmemleak's 5 s minimum age.
const kmemleakTimeout = 2 * time.Minute

// leakCheck is the end-of-timeline kmemleak scan of a debug kernel.
type leakCheck struct {
	on      bool            // the kernel has kmemleak
	err     error           // the scan failed: leaks not measured
	leaks   []results.Splat // one per leaked object
	seconds float64         // time the final scans took
}

// kmemleakClear forgets the leaks of boot and setup, so that the scan at the
// end reports only what the timeline leaked.
func (r *run) kmemleakClear(ctx context.Context) error {
	if r.hello == nil || !r.hello.Kmemleak {
		return nil
	}
	r.leak.on = true
	cctx, cancel := context.WithTimeout(ctx, kmemleakTimeout)
	defer cancel()
	var rep wire.KmemleakReport
	if err := r.ctl.call(cctx, wire.OpKmemleak, wire.Kmemleak{Clear: true}, &rep); err != nil {
		return infra("kmemleak: the scan before the timeline failed: %w", err)
	}
	r.cfg.Logf("kmemleak: cleared after boot and setup (%.1fs)", rep.Seconds)
	return nil
}

// kmemleakScan scans at the end of the timeline and keeps each leak, placed
// on the timeline at the time it was allocated (read time minus its age),
// and the report in kmemleak.txt.
func (r *run) kmemleakScan(ctx context.Context) {
	if !r.leak.on {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, kmemleakTimeout)
	defer cancel()
	var rep wire.KmemleakReport
	if r.leak.err = r.ctl.call(cctx, wire.OpKmemleak, wire.Kmemleak{}, &rep); r.leak.err != nil {
		return
	}
	read := time.Now()
	r.leak.seconds = rep.Seconds
	report := wire.Clip(rep.Report)
	if report != "" {
		os.WriteFile(filepath.Join(r.cfg.OutDir, "kmemleak.txt"), []byte(report), 0o644)
	}
	r.leak.leaks = results.ParseKmemleak([]byte(report))
	for i := range r.leak.leaks {
		sp := &r.leak.leaks[i]
		r.placeAt(sp, read.Add(-time.Duration(sp.Age*float64(time.Second))))
	}
	r.cfg.Logf("kmemleak: %d leaks (scans %.1fs)", len(r.leak.leaks), rep.Seconds)
}

// placeAt names the innermost step running at host time at.
func (r *run) placeAt(sp *results.Splat, at time.Time) {
	if r.tl == nil {
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
