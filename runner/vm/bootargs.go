package vm

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"napilab/kernels"
)

// BootTuning returns the kernel command-line words that shorten a lab
// guest's boot and change nothing a run measures; they come after
// baseCmdline and before the spec's and the scenario's words, which win.
// docs/setup.md, Machine and boot time, has what each is worth under TCG.
func BootTuning(kc kernels.BuildConfig) []string {
	words := []string{
		// The console prints notices and worse while the kernel boots:
		// the banner ("Linux version", which boot() looks for), warnings,
		// errors and splats' headlines. Every console byte is a few
		// emulated port writes under TCG, and a boot's ~250 info lines
		// cost about 0.2 s. The agent restores the kernel's default
		// console level once ready (restoreConsoleLevel), so SysRq
		// output and task stacks, printed at KERN_INFO, reach the
		// console during the run.
		"loglevel=6",
		// No legacy BSD ptys (/dev/ptyp*): registering their 256 pairs
		// is the second slowest initcall (~0.1 s); shells use /dev/pts.
		"pty.legacy_count=0",
		// No PS/2 mouse: probing its protocols runs beside /init (~0.1 s).
		// SysRq by sendkey (hang evidence) goes through the keyboard port.
		"i8042.noaux",
	}
	if w := lpjWord(kc); w != "" {
		words = append(words, w)
	}
	// 4-level page tables on kernels built for 5 (7.x: X86_5LEVEL is no
	// longer optional), as the 6.x kernels have: -cpu max offers LA57
	// under TCG, and every emulated TLB miss then walks one level more
	// (~0.2 s of a 7.3 boot). 7.3 takes it (la57 leaves /proc/cpuinfo)
	// and still prints it as unknown and passes it to /init, which
	// ignores its arguments; 6.x kernels are 4-level and do not get it.
	if kc.Value("CONFIG_PGTABLE_LEVELS") == "5" {
		words = append(words, "no5lvl")
	}
	return words
}

// lpjWord presets the delay loop's loops per jiffy ("lpj=N"), or "" when
// the kernel's HZ or the host's TSC rate is unknown. The boot CPU derives
// it from the TSC rate anyway; every other vCPU, a socket of its own,
// calibrates it against jiffies for ~0.1 s, which under TCG on a loaded
// host lands anywhere (2x the boot CPU's value was seen). The guest's TSC
// counts at the host's rate, under TCG and KVM alike.
func lpjWord(kc kernels.BuildConfig) string {
	hz, err := strconv.ParseInt(kc.Value("CONFIG_HZ"), 10, 64)
	if err != nil || hz <= 0 {
		return ""
	}
	return lpjFor(hostTSCkHz(), hz)
}

// lpjFor is the lpj word for a TSC of khz kHz and a kernel of hz, or "".
func lpjFor(khz, hz int64) string {
	if khz <= 0 || hz <= 0 {
		return ""
	}
	return fmt.Sprintf("lpj=%d", khz*1000/hz)
}

var tscOnce struct {
	sync.Once
	khz int64
}

// hostTSCkHz is the host's TSC rate in kHz, measured once per process
// (50 ms) and rounded to the MHz (0.05% at most, and the same command line
// from run to run on a host), or 0 when the host's TSC does not tick at a
// constant rate.
func hostTSCkHz() int64 {
	tscOnce.Do(func() {
		if b, err := os.ReadFile("/proc/cpuinfo"); err == nil && constantTSC(string(b)) {
			tscOnce.khz = (measureTSCkHz(50*time.Millisecond) + 500) / 1000 * 1000
		}
	})
	return tscOnce.khz
}

// constantTSC says whether cpuinfo's flags have constant_tsc.
func constantTSC(cpuinfo string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		name, flags, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(name) == "flags" {
			return strings.Contains(" "+flags+" ", " constant_tsc ")
		}
	}
	return false
}

// measureTSCkHz counts TSC ticks over about window of the monotonic clock:
// each end is a TSC reading bracketed by two clock readings at most 10 µs
// apart, so the rate is off by at most 20 µs / window. 0 when the host
// preempts every bracket or has no TSC.
func measureTSCkHz(window time.Duration) int64 {
	base := time.Now()
	t0, c0, ok := tscAt(base)
	if !ok {
		return 0
	}
	time.Sleep(window)
	t1, c1, ok := tscAt(base)
	if !ok || t1 <= t0 || c1 <= c0 {
		return 0
	}
	return int64(float64(t1-t0) / (float64(c1-c0) / float64(time.Millisecond)))
}

// tscAt reads the TSC and when it was read, since base.
func tscAt(base time.Time) (tsc uint64, at time.Duration, ok bool) {
	for try := 0; try < 100; try++ {
		before := time.Since(base)
		tsc = rdtsc()
		after := time.Since(base)
		if after-before <= 10*time.Microsecond && tsc != 0 {
			return tsc, (before + after) / 2, true
		}
	}
	return 0, 0, false
}
