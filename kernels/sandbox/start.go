package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"napilab/kernels/procgroup"
)

// Start starts cmd as UID:GID in a new user, mount, network and pid
// namespace: cmd writes only what UID may write, has no network and sees
// no process but its own. dirs are the folders cmd must reach; an ancestor UID
// cannot search (root's 0700 home above the cache) is covered, for cmd
// only, by an empty tmpfs in which dirs are bind-mounted at their own paths.
//
// The kernel sends Pdeathsig when the thread that started the child exits,
// and the covering mounts belong to that thread, so cmd is started and
// waited for on one locked thread that is retired afterwards; the returned
// wait returns cmd.Wait's error and must be called once. When not Active,
// cmd runs as lab's user as it would with cmd.Start and cmd.Wait.
func Start(cmd *exec.Cmd, dirs []string) (wait func() error, err error) {
	if !Active() {
		if err := procgroup.Start(cmd); err != nil {
			return nil, err
		}
		return cmd.Wait, nil
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	// Its own pid namespace: nothing it starts outlives it (setsid does
	// not escape the kill of the namespace's init), and it cannot signal
	// or ptrace processes outside, such as QEMU running as the same uid.
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID
	// UID is itself inside, with no supplementary groups; nothing else is
	// mapped. Not the namespace's root: the child has no capabilities, and
	// GNU patch, which gives a new file its old owner, sees files of
	// unmapped owners (shown as the overflow uid, UID) as its own. A
	// command that needs mounts nests its own user namespace (unshare
	// --user --map-root-user). setgroups is allowed because lab, not the
	// child, writes the maps, and only GID is mapped.
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: UID, HostID: UID, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: GID, HostID: GID, Size: 1}}
	a.Credential = &syscall.Credential{Uid: UID, Gid: GID}
	a.GidMappingsEnableSetgroups = true
	started, waited := make(chan error, 1), make(chan error, 1)
	onOwnThread(func() {
		if err := expose(dirs); err != nil {
			started <- err
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	})
	if err := <-started; err != nil {
		return nil, err
	}
	return func() error { return <-waited }, nil
}

// onOwnThread runs fn in a new goroutine locked to a thread that is not
// the main one and is retired, with the mounts only it sees, when fn
// returns. Not the main thread: /proc/self shows its mounts, and the
// runtime never retires it.
func onOwnThread(fn func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			fn() // never unlocked
			return
		}
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread() // not this thread: it is locked here
			close(locked)
			fn()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// expose makes dirs reachable by UID on the calling (locked) thread: in a
// private mount namespace, each topmost ancestor UID cannot search gets an
// empty tmpfs, and each dir below one is bind-mounted back at its path.
func expose(dirs []string) error {
	covers := coverFor(dirs)
	if len(covers) == 0 {
		return nil
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("failed to create a mount namespace for the build: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("failed to make mounts private for the build: %w", err)
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var under []string
	for _, d := range dirs {
		if !slices.ContainsFunc(covers, func(c string) bool { return within(d, c) }) {
			continue
		}
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("failed to open %s for the build: %w", d, err)
		}
		fds, under = append(fds, fd), append(under, d)
	}
	for _, c := range covers {
		if err := unix.Mount("tmpfs", c, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size=1m"); err != nil {
			return fmt.Errorf("failed to cover %s for the build: %w", c, err)
		}
	}
	for i, d := range under {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("failed to expose %s to the build: %w", d, err)
		}
		src := fmt.Sprintf("/proc/thread-self/fd/%d", fds[i])
		if err := unix.Mount(src, d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("failed to expose %s to the build: %w", d, err)
		}
	}
	return nil
}

// coverFor returns, for each dir, its topmost strict ancestor that UID
// cannot search, once each and outermost first.
func coverFor(dirs []string) []string {
	var covers []string
	for _, d := range dirs {
		d = filepath.Clean(d)
		parts := strings.Split(strings.TrimPrefix(d, "/"), "/")
		p := "/"
		for _, part := range parts[:len(parts)-1] {
			p = filepath.Join(p, part)
			if !searchable(p) {
				if !slices.ContainsFunc(covers, func(c string) bool { return within(p, c) }) {
					covers = append(covers, p)
				}
				break
			}
		}
	}
	slices.Sort(covers)
	// Outermost first: drop a cover inside one already kept.
	var out []string
	for _, c := range covers {
		if !slices.ContainsFunc(out, func(o string) bool { return within(c, o) }) {
			out = append(out, c)
		}
	}
	return out
}

// searchable reports whether UID:GID may search folder p by its mode bits.
func searchable(p string) bool {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return true // let the build report it
	}
	switch {
	case st.Uid == UID:
		return st.Mode&0o100 != 0
	case st.Gid == GID:
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}

// within reports whether p is c or below it.
func within(p, c string) bool { return p == c || strings.HasPrefix(p, c+"/") }
