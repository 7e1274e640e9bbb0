// Package sandbox runs the lab's untrusted work with less privilege when lab
// runs as root: QEMU as an unprivileged uid, and builds of a user's series
// (make, patch, selftests) in a new user, mount and network namespace whose
// root is that uid on the host.
//
//	wait, err := sandbox.Start(cmd, []string{cacheDir})
//	...
//	err = wait()
//
// When lab does not run as root nothing changes: commands run as its user.
package sandbox

import (
	"os"
	"syscall"
)

// UID and GID are the unprivileged host identity (nobody:nogroup) that QEMU
// and sandboxed builds run as.
const (
	UID = 65534
	GID = 65534
)

// Active reports whether lab drops privileges: only when it runs as root.
func Active() bool { return os.Geteuid() == 0 }

// Credential returns the identity QEMU runs as, with groups (such as the
// owner group of /dev/kvm) as supplementary groups, or nil when not Active.
func Credential(groups ...uint32) *syscall.Credential {
	if !Active() {
		return nil
	}
	return &syscall.Credential{Uid: UID, Gid: GID, Groups: groups}
}
