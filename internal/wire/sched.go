package wire

import (
	"fmt"
	"strconv"
	"strings"
)

// Scheduling policies by the names chrt gives them (sched(7)).
const (
	PolicyOther = "other" // SCHED_OTHER (SCHED_NORMAL): nice applies
	PolicyBatch = "batch" // SCHED_BATCH: nice applies
	PolicyIdle  = "idle"  // SCHED_IDLE
	PolicyFIFO  = "fifo"  // SCHED_FIFO: real-time, priority 1-99
	PolicyRR    = "rr"    // SCHED_RR: real-time, priority 1-99
)

// Policies lists the policy names a Sched (or a load) takes.
var Policies = []string{PolicyOther, PolicyBatch, PolicyIdle, PolicyFIFO, PolicyRR}

// RealTime says whether a policy takes a real-time priority (fifo, rr).
func RealTime(policy string) bool { return policy == PolicyFIFO || policy == PolicyRR }

// TakesNice says whether a policy has a nice value (other, batch); ""
// (the task keeps its policy) takes one too.
func TakesNice(policy string) bool {
	return policy == "" || policy == PolicyOther || policy == PolicyBatch
}

// Sched tunes every task (every thread) whose comm starts with Task: its CPU
// affinity, scheduling policy and priority, or nice value. Empty fields are
// left as they are.
type Sched struct {
	// Task is a comm prefix; comms are cut to 15 characters (TASK_COMM_LEN).
	Task string `json:"task"`
	// CPUs is an affinity list such as "1", "0-1" or "0,2".
	CPUs   string `json:"cpus,omitempty"`
	Policy string `json:"policy,omitempty"` // one of Policies
	// Priority is the real-time priority (1-99) of fifo and rr.
	Priority int  `json:"priority,omitempty"`
	Nice     *int `json:"nice,omitempty"` // -20..19, for other and batch
}

// Task is a task (a thread) by its id and comm.
type Task struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// ParseCPUList parses a CPU list as the kernel writes one (cpulist_parse):
// "1", "0-3", "0,2-3". It returns the CPUs in the order given.
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty cpu list")
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("bad cpu list %q: want CPUs like 1, 0-3 or 0,2", s)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
