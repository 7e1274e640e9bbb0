package runner

import (
	"os"
	"os/exec"

	"napilab/kernels"
)

// HostChecks lists what booting guests needs from the host.
func HostChecks() []kernels.Check {
	_, qerr := exec.LookPath("qemu-system-x86_64")
	_, terr := os.Stat("/dev/net/tun")
	return []kernels.Check{
		{What: "qemu-system-x86_64", Package: "qemu-system-x86", OK: qerr == nil},
		{What: "/dev/net/tun", Package: "(kernel tun module: modprobe tun)", OK: terr == nil},
		{What: "root (taps and namespaces)", Package: "(run as root)", OK: os.Geteuid() == 0},
	}
}
