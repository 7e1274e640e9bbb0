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
	order := append([]Job(nil), jobs...)
	sort.SliceStable(order, func(i, j int) bool { return order[i].Estimate > order[j].Estimate })
	var (
		mu     sync.Mutex
		out    []*results.Result
		failed bool
		wg     sync.WaitGroup
	)
	sem := make(chan struct{}, max(parallel, 1))
	for _, j := range order {
		sem <- struct{}{}
		mu.Lock()
		stop := ctx.Err() != nil || untilFail && failed
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Add(1)
		go func(j Job) {
			defer wg.Done()
			defer func() { <-sem }()
			r := runJob(ctx, j, Run)
			mu.Lock()
			defer mu.Unlock()
			out = append(out, r)
			failed = failed || r.Verdict == results.Fail
			if each != nil {
				each(j, r)
			}
		}(j)
	}
	wg.Wait()
	return out
}
