package kernels

import (
	"errors"
	"fmt"
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
		if s.Base.Suite != "" || s.Base.IsTree() {
			continue // FetchChecks; a tree is checked when its spec loads
		}
		if seen[s.Base.Tarball] {
			continue
		}
		seen[s.Base.Tarball] = true
		_, err := os.Stat(s.Base.Tarball)
		out = append(out, Check{What: s.Base.Tarball, Package: s.Base.Package, OK: err == nil})
	}
	return out
}

// FetchChecks says, for each spec whose base names a suite, whether its
// tarball is installed, fetched into cacheDir (empty: DefaultCacheDir), or
// fetchable: apt-get, dpkg-deb and the archive keyring are there. It does
// not use the network.
func FetchChecks(cacheDir string, specs ...*Spec) []Check {
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	var out []Check
	seen := map[Base]bool{}
	for _, s := range specs {
		b := s.Base
		if b.Suite == "" || seen[b] {
			continue
		}
		seen[b] = true
		what := b.Package + " from " + b.Suite
		if p, fetched, err := FetchState(cacheDir, b); err == nil && p != "" {
			how := "installed"
			if fetched {
				how = "fetched"
			}
			out = append(out, Check{What: what, Package: fmt.Sprintf("(%s: %s)", how, p), OK: true})
			continue
		}
		if err := checkFetchTools(); err != nil {
			var mt *MissingToolError
			pkg := "apt"
			if errors.As(err, &mt) {
				pkg = mt.Package
			}
			out = append(out, Check{What: what + " (not fetched; fetching needs apt-get and dpkg-deb)", Package: pkg})
			continue
		}
		if k := suiteKeyring(b.Suite); !regularFile(k) {
			out = append(out, Check{What: what + " (not fetched; apt verifies it with " + k + ")", Package: "debian-archive-keyring"})
			continue
		}
		out = append(out, Check{What: what, Package: "(fetchable: the lab fetches it on first build)", OK: true})
	}
	return out
}
