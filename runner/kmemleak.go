package runner

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/splat"
)

// kmemleakTimeout bounds the kmemleak request: two scans of a debug guest's
// memory under TCG (~5 s each measured) around kmemleak's 5 s minimum age.
const kmemleakTimeout = 2 * time.Minute

// leakCheck is the end-of-timeline kmemleak scan of a debug kernel.
type leakCheck struct {
	err   error           // the scan failed: leaks not measured
	leaks []results.Splat // grouped by title, placed where allocated
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
	boot := 0 // objects allocated before the topology setup
	for _, l := range splat.ParseKmemleak([]byte(report)) {
		up, ok := rep.Uptime(l.Jiffies)
		at := r.readyAt.Add(time.Duration((up - r.hello.Uptime) * float64(time.Second)))
		if ok && at.Before(r.setupAt) {
			boot++
			continue
		}
		sp := l.Splat
		if ok {
			r.placeAt(&sp, at)
		}
		leaks = append(leaks, sp)
	}
	r.leak.leaks = splat.Group(leaks)
	r.cfg.Logf("kmemleak: %d objects leaked by the run (%d titles), %d at boot (scans %.1fs)",
		len(leaks), len(r.leak.leaks), boot, rep.Seconds)
}
