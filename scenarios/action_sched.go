package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Sched tunes every task (threads included) whose comm starts with Task:
// affinity, scheduling policy and priority, nice. Fewer matches than Min
// fails the step.
type Sched struct {
	// Task is a comm prefix (napi/eth0-, ksoftirqd/); comms are cut to 15
	// characters, so match by prefix.
	Task     string `yaml:"task"`
	CPUs     string `yaml:"cpus"`                                                                  // affinity list: "1", "0-1"
	Policy   string `yaml:"policy" jsonschema:"enum=other,enum=batch,enum=idle,enum=fifo,enum=rr"` // other, batch, idle, fifo or rr
	Priority int    `yaml:"priority" jsonschema:"minimum=0,maximum=99"`                            // real-time priority 1-99, fifo and rr only
	Nice     *int   `yaml:"nice" jsonschema:"minimum=-20,maximum=19"`                              // -20..19, other and batch only
	Min      *int   `yaml:"min" jsonschema:"minimum=0"`                                            // tasks that must match, default 1; 0 allows none
}

// commMax is the longest comm the kernel keeps (TASK_COMM_LEN 16, less the NUL).
const commMax = 15

// boundThreads are kthreads the kernel keeps on their CPU (PF_NO_SETAFFINITY):
// it refuses their affinity with EINVAL.
var boundThreads = []string{"ksoftirqd/", "migration/", "cpuhp/", "kworker/"}

// MinTasks is how many tasks a sched step must match: Min, by default 1.
func (x *Sched) MinTasks() int {
	if x.Min == nil {
		return 1
	}
	return *x.Min
}

func (x *Sched) check(k *checker, st *Step) {
	c, p := k.c, st.Pos
	switch {
	case x.Task == "":
		c.add(p, "sched needs task: a comm prefix such as napi/eth0- or ksoftirqd/")
	case len(x.Task) > commMax:
		c.add(p, "sched task %q never matches: a comm has at most %d characters (TASK_COMM_LEN), use %q", x.Task, commMax, x.Task[:commMax])
	}
	if x.CPUs == "" && x.Policy == "" && x.Priority == 0 && x.Nice == nil {
		c.add(p, "sched needs at least one of cpus, policy, priority, nice")
	}
	if x.CPUs != "" {
		k.cpuList(p, "sched cpus", x.CPUs)
		for _, b := range boundThreads {
			if x.Task != "" && (strings.HasPrefix(b, x.Task) || strings.HasPrefix(x.Task, b)) {
				c.add(p, "sched task %q with cpus: matches %s threads, which the kernel keeps on their CPU (it refuses their affinity with EINVAL)",
					x.Task, strings.TrimSuffix(b, "/"))
				break
			}
		}
	}
	k.schedParams(p, "sched ", "", x.Policy, x.Priority, x.Nice)
	if x.Min != nil && *x.Min < 0 {
		c.add(p, "sched min %d: want 0 or more tasks (0 allows none)", *x.Min)
	}
}

func (x *Sched) explain() (time.Duration, string) {
	parts := schedWords(x.Policy, x.Priority, x.Nice)
	if x.CPUs != "" {
		parts = append([]string{"cpus " + x.CPUs}, parts...)
	}
	want := fmt.Sprintf("at least %d must match", x.MinTasks())
	if x.MinTasks() == 0 {
		want = "none need match"
	}
	return 0, fmt.Sprintf("tune tasks named %s*: %s (%s)", x.Task, strings.Join(parts, ", "), want)
}

func (x *Sched) label() string { return "sched " + x.Task }

func (x *Sched) run(ctx context.Context, lab Lab, _ *Step, _ int) error { return lab.Sched(ctx, x) }
