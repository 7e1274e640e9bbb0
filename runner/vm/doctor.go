package vm

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"

	"napilab/kernels"
)

// HostChecks lists what booting guests needs from the host.
func HostChecks() []kernels.Check {
	_, qerr := exec.LookPath("qemu-system-x86_64")
	_, terr := os.Stat("/dev/net/tun")
	return []kernels.Check{
		{What: "qemu-system-x86_64", Package: "qemu-system-x86", OK: qerr == nil},
		{What: "qemu-system-x86_64 -sandbox " + sandboxOpts, Package: "qemu-system-x86 (built with seccomp)", OK: qerr == nil && sandboxWorks()},
		{What: "/dev/net/tun", Package: "(kernel tun module: modprobe tun)", OK: terr == nil},
		{What: "root (taps and namespaces)", Package: "(run as root)", OK: os.Geteuid() == 0},
	}
}

// sandboxWorks starts a machine-less QEMU with the lab's seccomp options
// and quits it from the monitor.
func sandboxWorks() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-M", "none", "-nodefaults", "-no-user-config",
		"-display", "none", "-sandbox", sandboxOpts, "-monitor", "stdio")
	cmd.Stdin = strings.NewReader("quit\n")
	return cmd.Run() == nil
}
