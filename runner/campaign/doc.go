// Package campaign is the room of the campaigns that run many runs: the
// plan of lab run (scenarios by the guest they boot, streamed beside the
// builds, shards and run folders), the guests they boot (kernels, images),
// the perf A/B runs and their budgets, the bisects of a series or a range,
// and the stored baselines.
//
// It decides what runs where and what the runs say together; one run is
// package runner's. It knows no flags, exit codes or terminals: lab fills
// its options, gives it the writers its lines go to and the hooks that
// print (a run's verdict block) or build (a kernel, with lab's progress).
package campaign
