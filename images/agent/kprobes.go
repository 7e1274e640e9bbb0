package agent

import (
	"fmt"
	"os"
)

// plainKprobes turns off kprobe optimization, so that the agent's kprobes
// stay plain int3 probes: optimizing one rewrites live text into a jump
// while other CPUs may run it (text_poke_bp), the kind of cross-CPU code
// patching that under TCG oopsed the BPF dispatcher and left a vCPU looping
// on a removed probe's stale int3 (see pollCounter.watchQueues). Only as the
// guest's init: a test on a host leaves its sysctls alone.
func plainKprobes() error {
	if os.Getpid() != 1 {
		return nil
	}
	if err := os.WriteFile("/proc/sys/debug/kprobes-optimization", []byte("0"), 0o644); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("failed to turn off kprobe optimization: %w", err)
	}
	return nil
}
