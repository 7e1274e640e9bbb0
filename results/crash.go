package results

import "fmt"

// CrashType classifies a kernel splat.
type CrashType string

// Crash types, one per family of kernel reports.
const (
	CrashWarning          CrashType = "WARNING"              // WARNING: CPU: 0 PID: 1 at net/core/dev.c:123 napi_disable+0x..
	CrashBug              CrashType = "BUG"                  // kernel BUG at ..., or any other "BUG: ..."
	CrashGPF              CrashType = "GPF"                  // general protection fault
	CrashSoftLockup       CrashType = "SOFT_LOCKUP"          // watchdog: BUG: soft lockup - CPU#0 stuck for 22s!
	CrashHardLockup       CrashType = "HARD_LOCKUP"          // Watchdog detected hard LOCKUP on cpu 1
	CrashHungTask         CrashType = "HUNG_TASK"            // INFO: task kworker/0:1:23 blocked for more than 120 seconds.
	CrashRCUStall         CrashType = "RCU_STALL"            // rcu: INFO: rcu_preempt detected stalls on CPUs/tasks
	CrashPanic            CrashType = "PANIC"                // Kernel panic - not syncing: ...
	CrashKASAN            CrashType = "KASAN"                // BUG: KASAN: use-after-free in ...
	CrashLockdep          CrashType = "LOCKDEP"              // WARNING: possible circular locking dependency detected
	CrashUBSAN            CrashType = "UBSAN"                // UBSAN: shift-out-of-bounds in net/core/dev.c:123:45
	CrashMemoryLeak       CrashType = "MEMORY_LEAK"          // kmemleak: unreferenced object 0xffff... (size 32)
	CrashUnregisterNetdev CrashType = "UNREGISTER_NETDEVICE" // unregister_netdevice: waiting for eth0 to become free
	CrashOops             CrashType = "OOPS"                 // Oops: 0000 [#1] that no more specific report explains
)

// Splat is one kernel error report found on the console.
type Splat struct {
	Type    CrashType `json:"type"`              // the kind of report
	Title   string    `json:"title"`             // the same for every occurrence of a bug: "WARNING in napi_disable"
	Line    int       `json:"line"`              // the 1-based console line where the report starts
	Time    float64   `json:"time"`              // the printk timestamp of that line in seconds, -1 if none
	Report  string    `json:"report"`            // the report's console lines, up to its end or a bound
	Frame   string    `json:"frame"`             // the guilty function named in the title, empty if unknown
	Step    string    `json:"step,omitempty"`    // the timeline step running when it was printed
	Offset  float64   `json:"offset,omitempty"`  // seconds since that step started
	Allowed string    `json:"allowed,omitempty"` // the allow-list reason, when allowed
	// Count is how many reports of this title it stands for (memory leaks
	// are grouped by title); 0 or 1 for one.
	Count int `json:"count,omitempty"`
}

// Where says where the report is: its console line and printk time (or,
// for a memory leak, kmemleak.txt and the object's age) and the step it
// was printed in (allocated in, for a leak).
func (s Splat) Where() string {
	w := fmt.Sprintf("console line %d", s.Line)
	if s.Time >= 0 {
		w += fmt.Sprintf(", [%.6f]", s.Time)
	}
	if s.Type == CrashMemoryLeak {
		w = "kmemleak.txt"
		if s.Count > 1 {
			w = fmt.Sprintf("%d objects, kmemleak.txt", s.Count)
		}
	}
	if s.Step != "" {
		verb := "during"
		if s.Type == CrashMemoryLeak {
			verb = "allocated during"
		}
		w += fmt.Sprintf(", %s %q +%.2fs", verb, s.Step, s.Offset)
	}
	return w
}
