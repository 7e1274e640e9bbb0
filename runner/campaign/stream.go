package campaign

import (
	"context"

	"napilab/results"
	"napilab/runner"
)

// BuildNice is the niceness of the builds lab run streams beside its runs:
// a guest beside a build keeps most of the CPU (nice 10 weighs a tenth of
// nice 0), and the build takes what the guests leave.
const BuildNice = 10

// streamKernels builds in one background goroutine, in passes, and sends
// each batch of runs on batches as soon as its guest is built, so runs
// overlap the builds after them. plan(ctx, pass, kpath) builds the guest
// the runs of that pass boot on the kernel at kpath and returns them: pass
// 0 is the plain kernel's, later ones the flavours and images some
// scenarios need, so every kernel's plain runs come before any kernel's
// flavours are built. Kernels build in the order of kpaths. With buildFirst
// no batch is sent before every build is done (lab run's order before it
// streamed). Only this goroutine builds, so no build of this lab waits for
// another, and runs take no cache lock.
//
// batches holds every batch (the builder never waits for the runs) and is
// closed after the last, or early when ctx ends. done is closed once the
// goroutine has returned: after a cancel, once plan has returned and its
// build's processes are gone.
func streamKernels(ctx context.Context, kpaths []string, passes int, buildFirst bool,
	plan func(ctx context.Context, pass int, kpath string) []runner.Job) (batches <-chan []runner.Job, done <-chan struct{}) {
	out := make(chan []runner.Job, len(kpaths)*passes)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer close(out)
		var held [][]runner.Job
		for pass := range passes {
			for _, kpath := range kpaths {
				if ctx.Err() != nil {
					return
				}
				jobs := plan(ctx, pass, kpath)
				switch {
				case ctx.Err() != nil:
					return // a cancelled build: its runs are not wanted
				case buildFirst:
					held = append(held, jobs)
				case len(jobs) > 0:
					out <- jobs
				}
			}
		}
		for _, jobs := range held {
			if len(jobs) > 0 {
				out <- jobs
			}
		}
	}()
	return out, finished
}

// runStream runs the runs plan returns (see streamKernels) as soon as they
// come, with o (runner.RunStream), and returns when every run and build has
// ended. With o.UntilFail the first FAIL also stops the builds: no run
// would use them.
func runStream(ctx context.Context, kpaths []string, passes int, buildFirst bool,
	plan func(context.Context, int, string) []runner.Job, o runner.StreamOptions) {
	buildCtx, stopBuilds := context.WithCancel(ctx)
	defer stopBuilds()
	batches, built := streamKernels(buildCtx, kpaths, passes, buildFirst, plan)
	each := o.Each
	o.Each = func(j runner.Job, r *results.Result) {
		if each != nil {
			each(j, r)
		}
		if o.UntilFail && r.Verdict == results.Fail {
			stopBuilds()
		}
	}
	runner.RunStream(ctx, batches, o)
	stopBuilds() // runStream returned early: ctx ended or a run FAILed
	<-built
}
