package runner

import (
	"fmt"
	"napilab/runner/vm"
	"time"
)

// hostShare is QEMU's CPU use over a window of host time: a step from its
// start to its deadline.
type hostShare struct {
	wall        time.Duration
	ran, waited time.Duration
	vcpus       int  // the guest's vCPU threads (0: one)
	measured    bool // false: the use could not be read at one end
}

// measureShare returns the share between from and the use read now;
// read is nil or failing for a guest that cannot say.
func measureShare(read func() (vm.CPUUse, error), from vm.CPUUse, fromOK bool, began time.Time, vcpus int) hostShare {
	sh := hostShare{wall: time.Since(began), vcpus: vcpus}
	if read == nil || !fromOK {
		return sh
	}
	now, err := read()
	if err != nil {
		return sh
	}
	sh.ran, sh.waited = now.Since(from)
	sh.measured = true
	return sh
}

// Starvation thresholds (see starved). Measured on the lab's 2-core host
// with a kernel build and other tests beside it, over 5 s, for one
// CPU-bound thread (a TCG vCPU is one): alone it ran 0.60 CPU and waited
// 0.40 of the time; beside 2 spinning processes it ran 0.19 and waited
// 0.80; beside 6, 0.08 and 0.92. An idle thread (a halted guest) ran and
// waited ~0 either way.
const (
	// starvedRan: QEMU ran under half a CPU per vCPU on average.
	starvedRan = 0.5
	// starvedWaited: its threads waited on a run queue at least a quarter
	// of the window, and at least as long as they ran.
	starvedWaited = 0.25
)

// starved says whether the host, not the guest, made the window slow:
// QEMU ran less than starvedRan of a CPU while its threads waited for a
// CPU at least as long as they ran and at least starvedWaited of the
// window. A guest that wanted no CPU (halted, its tasks blocked) is not
// starved however little it ran. Unmeasured is not starved.
func (s hostShare) starved() bool {
	if !s.measured || s.wall <= 0 {
		return false
	}
	w := float64(s.wall)
	return float64(s.ran) < starvedRan*w*float64(max(1, s.vcpus)) && s.waited >= s.ran && float64(s.waited) >= starvedWaited*w
}

// String says what QEMU got: "QEMU got 0.40 s of CPU in 10.00 s (and
// waited 8.10 s for one)".
func (s hostShare) String() string {
	if !s.measured {
		return fmt.Sprintf("QEMU's CPU use over the %.2f s was not measured", s.wall.Seconds())
	}
	return fmt.Sprintf("QEMU got %.2f s of CPU in %.2f s (and waited %.2f s for one)", s.ran.Seconds(), s.wall.Seconds(), s.waited.Seconds())
}
