package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"

	"napilab/results/stats"
	"napilab/runner/vm"
)

var qemuVersion = regexp.MustCompile(`version (\d+\.\d+(?:\.\d+)?)`)

// HostClass describes the host a measurement is valid on: CPU model, cores,
// QEMU's version and the accelerator (accel "" resolves as for a run).
// Performance figures from another class are not comparable.
func HostClass(ctx context.Context, accel string) (stats.Host, error) {
	a, err := vm.PickAccel(accel)
	if err != nil {
		return stats.Host{}, err
	}
	h := stats.Host{CPU: cpuModel(), Cores: runtime.NumCPU(), Accel: a}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, (&vm.QEMU{}).Program(), "--version").Output()
	if err != nil {
		return h, fmt.Errorf("QEMU's version: %w (apt-get install qemu-system-x86)", err)
	}
	m := qemuVersion.FindSubmatch(out)
	if m == nil {
		return h, fmt.Errorf("QEMU's version: no version in %q", strings.TrimSpace(string(out)))
	}
	h.QEMU = string(m[1])
	return h, nil
}

// cpuModel is /proc/cpuinfo's first "model name", or "unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
