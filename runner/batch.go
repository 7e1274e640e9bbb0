package runner

import (
	"context"
	"hash/fnv"
	"runtime"
	"sort"
	"sync"
	"time"

	"napilab/results"
)

// Job is one run of a batch.
type Job struct {
	Name     string // stable identity: scenario, kernel, parameters, repeat index
	Group    string // runs that repeat the same thing share a group
	Cfg      Config
	Estimate time.Duration // expected wall time, for longest-first order
	// RetryTiming runs a FAIL on timing-only assertions alone once more
	// (runJob).
	RetryTiming bool
}

// Shard keeps the jobs of shard k of n (1-based): a job belongs to the
// shard its name hashes to, so every machine of a CI matrix computes the
// same split without talking to the others.
func Shard(jobs []Job, k, n int) []Job {
	if n <= 1 {
		return jobs
	}
	var out []Job
	for _, j := range jobs {
		h := fnv.New32a()
		h.Write([]byte(j.Name))
		if int(h.Sum32()%uint32(n)) == k-1 {
			out = append(out, j)
		}
	}
	return out
}

// MaxParallel bounds concurrent guests by host cores and memory: each
// TCG guest wants about a core, and its memory plus QEMU's own.
func MaxParallel(want int, memoryMB int) int {
	n := runtime.NumCPU()
	if free := freeMemoryMB(); free > 0 && memoryMB > 0 {
		n = min(n, max(1, free/(memoryMB+256)))
	}
	if want > 0 {
		n = min(n, want)
	}
	return max(n, 1)
}

// RunBatch runs jobs, parallel at a time, longest first. With untilFail it
// starts no new job after the first FAIL. each is called as runs finish
// (never concurrently).
func RunBatch(ctx context.Context, jobs []Job, parallel int, untilFail bool, each func(Job, *results.Result)) []*results.Result {
	batches := make(chan []Job, 1)
	batches <- jobs
	close(batches)
	return RunStream(ctx, batches, StreamOptions{Parallel: parallel, UntilFail: untilFail, Each: each})
}

// StreamOptions tune RunStream.
type StreamOptions struct {
	// Parallel is how many jobs run at once (at least 1).
	Parallel int
	// UntilFail starts no new job after the first FAIL.
	UntilFail bool
	// Each is called as runs finish, never concurrently; may be nil.
	Each func(Job, *results.Result)
	// Run runs one configuration; nil means Run (tests pass a fake).
	Run func(context.Context, Config) *results.Result
}

// RunStream runs the jobs of each batch as the batch arrives (lab run: a
// kernel's runs as soon as it is built), each batch longest first, the
// next batch's jobs taking the slots the last one frees. The very first
// batch starts with its shortest job: the first verdict comes that much
// sooner, and the longest ones still start before the rest. It returns when
// batches is closed and every started run is done, or, without draining
// batches, once ctx ends or (UntilFail) a run FAILed and the started runs
// are done: a sender must not block on batches then (buffer it, or select
// on a context the caller cancels).
func RunStream(ctx context.Context, batches <-chan []Job, o StreamOptions) []*results.Result {
	run := o.Run
	if run == nil {
		run = Run
	}
	var (
		mu     sync.Mutex
		out    []*results.Result
		failed bool
		wg     sync.WaitGroup
		open   = true
		first  = true
		// failedCh closes at the first FAIL when UntilFail: no batch is waited for then.
		failedCh = make(chan struct{})
	)
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ctx.Err() != nil || o.UntilFail && failed
	}
	sem := make(chan struct{}, max(o.Parallel, 1))
	for {
		var batch []Job
		select {
		case <-ctx.Done():
		case <-failedCh:
		case batch, open = <-batches:
		}
		if !open || stopped() {
			wg.Wait()
			return out
		}
		order := append([]Job(nil), batch...)
		sort.SliceStable(order, func(i, j int) bool { return order[i].Estimate > order[j].Estimate })
		if first && len(order) > 1 {
			order = append(order[len(order)-1:], order[:len(order)-1]...)
		}
		first = false
		for _, j := range order {
			sem <- struct{}{}
			if stopped() {
				<-sem
				wg.Wait()
				return out
			}
			wg.Add(1)
			go func(j Job) {
				defer wg.Done()
				defer func() { <-sem }()
				r := runJob(ctx, j, run)
				mu.Lock()
				defer mu.Unlock()
				out = append(out, r)
				if r.Verdict == results.Fail && !failed && o.UntilFail {
					close(failedCh)
				}
				failed = failed || r.Verdict == results.Fail
				if o.Each != nil {
					o.Each(j, r)
				}
			}(j)
		}
	}
}
