package kernels

import (
	"os"
	"os/exec"
)

// Check is one host requirement and whether it is met.
type Check struct {
	What    string // a tool, file or device
	Package string // the Debian package that provides it
	OK      bool
}

// HostChecks lists what building the given specs needs from the host.
func HostChecks(specs ...*Spec) []Check {
	var out []Check
	for _, t := range append(buildTools, "patch", "unshare", "mount") {
		_, err := exec.LookPath(t)
		out = append(out, Check{What: t, Package: toolPackages[t], OK: err == nil})
	}
	_, err := exec.LookPath("ccache")
	out = append(out, Check{What: "ccache", Package: "ccache", OK: err == nil})
	_, err = os.Stat("/usr/include/gelf.h") // objtool, for the ORC unwinder
	out = append(out, Check{What: "libelf headers", Package: "libelf-dev", OK: err == nil})
	seen := map[string]bool{}
	for _, s := range specs {
		if seen[s.Base.Tarball] {
			continue
		}
		seen[s.Base.Tarball] = true
		_, err := os.Stat(s.Base.Tarball)
		out = append(out, Check{What: s.Base.Tarball, Package: s.Base.Package, OK: err == nil})
	}
	return out
}
