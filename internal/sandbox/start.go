package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"napilab/internal/procgroup"
)

// A Mount puts one host folder into a jail (see Start).
type Mount struct {
	// At is the folder's path in the jail.
	At string
	// From is the host folder shown at At; empty means At itself.
	From string
	// Write makes the folder writable; the jailed uid still writes only
	// what it owns.
	Write bool
	// Upper and Work, when set, make the mount an overlay: From read-only
	// below, the command's writes landing in Upper (Work is overlayfs's).
	Upper, Work string
}

// Writable returns read-write mounts of dirs at their own paths.
func Writable(dirs ...string) []Mount {
	var ms []Mount
	for _, d := range dirs {
		ms = append(ms, Mount{At: d, Write: true})
	}
	return ms
}

// ReadOnly returns read-only mounts of dirs at their own paths.
func ReadOnly(dirs ...string) []Mount {
	var ms []Mount
	for _, d := range dirs {
		ms = append(ms, Mount{At: d})
	}
	return ms
}

// jailRoot is where a jail's root is built, in a mount namespace only the
// starting thread and the jailed command see; on the host it stays an empty
// folder.
const jailRoot = "/run/napilab/jail"

// systemDirs are shown read-only in every jail: the programs, libraries and
// configuration a build runs with. Top-level symlinks (merged /usr: /bin ->
// usr/bin) are copied as links.
var systemDirs = []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// devices are the host's device nodes a jail's /dev holds.
var devices = []string{"null", "zero", "full", "random", "urandom"}

// Start starts cmd as UID:GID in a new user, mount, network and pid
// namespace, pivoted into a jail: a fresh root holding the system's
// programs and libraries read-only, a private /tmp and /dev/shm, the
// device nodes in devices, a /proc of its own pid namespace, no /sys,
// home or run folders, and the given mounts. cmd writes only what UID owns among the writable mounts,
// has no network, sees no process but its own, and reaches no other build,
// cache folder or lab process. cmd.Dir defaults to / (inside the jail).
//
// The kernel sends Pdeathsig when the thread that started the child exits,
// and the jail's mounts belong to that thread, so cmd is started and
// waited for on one locked thread that is retired afterwards; the returned
// wait returns cmd.Wait's error and must be called once. When not Active,
// cmd runs as lab's user with the host's files, as with cmd.Start and
// cmd.Wait, and the mounts are ignored.
func Start(cmd *exec.Cmd, mounts []Mount) (wait func() error, err error) {
	if !Active() {
		if err := procgroup.Start(cmd); err != nil {
			return nil, err
		}
		return cmd.Wait, nil
	}
	if err := checkMounts(mounts); err != nil {
		return nil, err
	}
	mounts, err = withTools(cmd, mounts)
	if err != nil {
		return nil, err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	// Its own pid namespace: nothing it starts outlives it (setsid does
	// not escape the kill of the namespace's init), and it cannot signal
	// or ptrace processes outside, such as QEMU running as the same uid.
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID
	// The child starts as the namespace's root, which is UID on the host
	// (nothing else is mapped): enough to mount a /proc of its own pid
	// namespace and pivot into the jail (see enterJail), never more than
	// UID on the host's files. The command itself then runs as UID in a
	// user namespace of its own, with no capability: GNU patch, which
	// gives a new file its old owner, sees files of unmapped owners (the
	// overflow uid, UID) as its own. setgroups is allowed because lab, not
	// the child, writes the maps.
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: UID, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: GID, Size: 1}}
	a.Credential = &syscall.Credential{Uid: 0, Gid: 0}
	a.GidMappingsEnableSetgroups = true
	dir := cmd.Dir
	if dir == "" {
		dir = "/"
	}
	// The command by its name when it has no folder, so that it sees the
	// argv[0] it was given (GNU patch names itself by it); the jail's PATH
	// finds cmd.Path first (withTools).
	prog := cmd.Path
	if len(cmd.Args) > 0 && cmd.Args[0] != "" && !strings.Contains(cmd.Args[0], "/") {
		prog = cmd.Args[0]
	}
	argv, err := enterJail(dir, prog, cmd.Args[1:])
	if err != nil {
		return nil, err
	}
	cmd.Path, cmd.Args, cmd.Dir = argv[0], argv, "/"
	// Only stdin, stdout, stderr and ExtraFiles may reach the jail: a
	// folder fd lab inherited without close-on-exec would lead out of the
	// jail (fchdir). Marking every other fd close-on-exec affects no child lab
	// starts on purpose (those get their fds through ExtraFiles).
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return nil, fmt.Errorf("sandbox: failed to mark inherited fds close-on-exec: %w", err)
	}
	started, waited := make(chan error, 1), make(chan error, 1)
	onOwnThread(func() {
		if err := buildJail(mounts); err != nil {
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

// checkMounts refuses mounts the jail cannot hold: relative or unclean
// paths, one inside another, overlay options that would need escaping.
func checkMounts(mounts []Mount) error {
	for i, m := range mounts {
		for _, p := range []string{m.At, m.From, m.Upper, m.Work} {
			if p != "" && (!filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsAny(p, ",:\\\n")) {
				return fmt.Errorf("sandbox: bad mount path %q", p)
			}
		}
		if m.At == "/" || (m.Upper == "") != (m.Work == "") {
			return fmt.Errorf("sandbox: bad mount %+v", m)
		}
		for j, o := range mounts {
			if i != j && within(m.At, o.At) {
				return fmt.Errorf("sandbox: mount %s is inside mount %s", m.At, o.At)
			}
		}
		for _, s := range systemDirs {
			if within(m.At, s) || within(s, m.At) {
				return fmt.Errorf("sandbox: mount %s overlaps the system folder %s", m.At, s)
			}
		}
	}
	return nil
}

// homes hold more than programs: a PATH folder below one (pyenv's shims)
// is not shown in a jail.
var homes = []string{"/root", "/home"}

// withTools shows lab's PATH in the jail: the folders of PATH outside the
// system folders, homes and the mounts are added read-only (lab's own
// environment, not a build's input; tests put stand-ins there), the jail's
// PATH keeps only what it shows, and cmd's program, when the host found it
// in a folder the jail does not show, is looked up again in the jail's PATH.
func withTools(cmd *exec.Cmd, mounts []Mount) ([]Mount, error) {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	shown := func(d string) bool {
		return slices.ContainsFunc(systemDirs, func(s string) bool { return within(d, s) }) ||
			slices.ContainsFunc(mounts, func(m Mount) bool { return within(d, m.At) })
	}
	mounts = slices.Clone(mounts)
	var path []string
	val, _ := envValue(env, "PATH")
	for _, d := range filepath.SplitList(val) {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d || slices.Contains(path, d) {
			continue
		}
		if !shown(d) {
			fi, err := os.Lstat(d)
			if err != nil || !fi.IsDir() || slices.ContainsFunc(homes, func(h string) bool { return within(d, h) }) ||
				slices.ContainsFunc(mounts, func(m Mount) bool { return within(m.At, d) }) || checkMounts([]Mount{{At: d}}) != nil {
				continue
			}
			mounts = append(mounts, Mount{At: d})
		}
		path = append(path, d)
	}
	cmd.Env = append(jailEnv(env), "PATH="+strings.Join(path, ":"), "HOME=/nonexistent")
	if filepath.IsAbs(cmd.Path) && !slices.ContainsFunc(path, func(d string) bool { return within(cmd.Path, d) }) &&
		!shown(filepath.Dir(cmd.Path)) {
		name := filepath.Base(cmd.Path)
		cmd.Path = ""
		for _, d := range path {
			if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				cmd.Path = filepath.Join(d, name)
				break
			}
		}
		if cmd.Path == "" {
			return nil, fmt.Errorf("sandbox: %s is not on the jail's PATH (%s)", name, strings.Join(path, ":"))
		}
	}
	return mounts, nil
}

// jailEnv keeps of env only what a build may need: locale, time zone,
// reproducibility and the settings lab gives ccache, kbuild and patch. Not
// lab's PATH, HOME or TMPDIR (set for the jail), and nothing else: a
// hostile Makefile could print a CI token into the log it keeps.
func jailEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "LANG", k == "LANGUAGE", k == "TZ", k == "SOURCE_DATE_EPOCH", k == "PATCH_GET",
			strings.HasPrefix(k, "LC_"), strings.HasPrefix(k, "CCACHE_"), strings.HasPrefix(k, "KBUILD_"):
			out = append(out, kv)
		}
	}
	return out
}

// envValue returns the value of key in env.
func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// enterScript is the jail's entry, run by the namespace's root (UID on the
// host) in the starting thread's mount namespace: it mounts a /proc of the
// jail's own pid namespace (objtool reads /proc/self/maps; the host's /proc
// must still be visible for that mount to be allowed), pivots into the
// jail (through a bind of it made here: mounts inherited from lab are
// locked, and pivot_root refuses a locked one) and detaches the host's tree (gone from the namespace: nothing to
// escape to), then runs the command as UID in a new user namespace with no
// capability and the parent-death signal set again. Arguments: jail,
// folder, UID, GID, the five tools, the command.
const enterScript = `set -e
uid=$3 gid=$4 mount=$5 pivot_root=$6 umount=$7 unshare=$8 setpriv=$9
"$mount" -n --rbind "$1" "$1"
"$mount" -n -t proc -o nosuid,nodev,noexec proc "$1/proc"
cd "$1"
"$pivot_root" . .old
"$umount" -n -l /.old
cd "$2"
shift 9
exec "$unshare" --user --map-user="$uid" --map-group="$gid" -- "$setpriv" --pdeathsig KILL -- "$@"`

// enterTools are the system's programs enterScript runs, looked up in
// systemPath.
var enterTools = []string{"mount", "pivot_root", "umount", "unshare", "setpriv"}

// systemPath is where enterJail looks for its tools.
const systemPath = "/usr/sbin:/usr/bin:/sbin:/bin"

// enterJail returns the argv that runs path with args as UID inside the
// jail, in folder dir (a path inside the jail).
func enterJail(dir, path string, args []string) ([]string, error) {
	sh, err := lookSystem("sh")
	if err != nil {
		return nil, err
	}
	argv := []string{sh, "-c", enterScript, "napilab-jail", jailRoot, dir, strconv.Itoa(UID), strconv.Itoa(GID)}
	for _, t := range enterTools {
		p, err := lookSystem(t)
		if err != nil {
			return nil, err
		}
		argv = append(argv, p)
	}
	return append(append(argv, path), args...), nil
}

// lookSystem finds the system program name in systemPath.
func lookSystem(name string) (string, error) {
	for _, d := range filepath.SplitList(systemPath) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("sandbox: %s not found in %s (util-linux)", name, systemPath)
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

// buildJail builds the jail's root at jailRoot in a private mount namespace
// of the calling (locked) thread.
func buildJail(mounts []Mount) error {
	if err := os.MkdirAll(jailRoot, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", jailRoot, err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
		return fmt.Errorf("failed to create a mount namespace for the build: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("failed to make mounts private for the build: %w", err)
	}
	tmpfs := func(at, opts string) error {
		if err := unix.Mount("tmpfs", at, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("failed to mount a tmpfs at %s for the build: %w", at, err)
		}
		return nil
	}
	// The root holds only mount points: root's, not writable by UID.
	if err := tmpfs(jailRoot, "mode=755,size=1m"); err != nil {
		return err
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return err
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, jailRoot+d); err != nil {
				return fmt.Errorf("failed to build the jail: %w", err)
			}
		default:
			if err := bind(d, d, false); err != nil {
				return err
			}
		}
	}
	for _, d := range []string{"/tmp", "/dev", "/proc", "/.old"} {
		if err := os.Mkdir(jailRoot+d, 0o755); err != nil {
			return fmt.Errorf("failed to build the jail: %w", err)
		}
	}
	if err := tmpfs(jailRoot+"/tmp", "mode=1777,size=2g"); err != nil {
		return err
	}
	if err := makeDev(tmpfs); err != nil {
		return err
	}
	for _, m := range mounts {
		if err := mount(m); err != nil {
			return err
		}
	}
	// Nothing more is added: the root and /dev become read-only.
	for _, d := range []string{jailRoot + "/dev", jailRoot} {
		if err := unix.Mount("", d, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return fmt.Errorf("failed to seal the jail's %s: %w", d, err)
		}
	}
	return nil
}

// makeDev fills the jail's /dev: the host's nodes in devices, a private
// /dev/shm, and the usual links (dangling without /proc, as a hint).
func makeDev(tmpfs func(at, opts string) error) error {
	dev := jailRoot + "/dev"
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=755,size=1m"); err != nil {
		return fmt.Errorf("failed to mount the jail's /dev: %w", err)
	}
	for _, n := range devices {
		// A mount point made without opening it: a build starting beside
		// this one forks while we would hold it open for writing, and its
		// child's copy of the fd keeps the /dev tmpfs from going read-only.
		if err := unix.Mknod(filepath.Join(dev, n), unix.S_IFREG|0o666, 0); err != nil {
			return fmt.Errorf("failed to build the jail: %w", err)
		}
		if err := unix.Mount("/dev/"+n, filepath.Join(dev, n), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("failed to bind /dev/%s into the jail: %w", n, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("failed to build the jail: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(dev, "shm"), 0o755); err != nil {
		return fmt.Errorf("failed to build the jail: %w", err)
	}
	return tmpfs(filepath.Join(dev, "shm"), "mode=1777,size=64m")
}

// mount shows m in the jail.
func mount(m Mount) error {
	from := m.From
	if from == "" {
		from = m.At
	}
	if m.Upper == "" {
		return bind(from, m.At, m.Write)
	}
	at := jailRoot + m.At
	if err := os.MkdirAll(at, 0o755); err != nil {
		return fmt.Errorf("failed to expose %s to the build: %w", m.At, err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", from, m.Upper, m.Work)
	if err := unix.Mount("overlay", at, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("failed to mount an overlay of %s for the build: %w", from, err)
	}
	return nil
}

// bind shows host folder from at path at in the jail; read-only unless
// write. from's last component is not followed if it is a symlink.
func bind(from, at string, write bool) error {
	fd, err := unix.Open(from, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("failed to expose %s to the build: %w", from, &os.PathError{Op: "open", Path: from, Err: err})
	}
	defer unix.Close(fd)
	target := jailRoot + at
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("failed to expose %s to the build: %w", from, err)
	}
	src := fmt.Sprintf("/proc/thread-self/fd/%d", fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("failed to expose %s to the build: %w", from, err)
	}
	// The whole tree read-only (when asked), no set-id and no devices:
	// submounts too (a container's bind of /etc/hosts), unlike a remount.
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if !write {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(-1, target, unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("failed to expose %s to the build: %w", from, err)
	}
	return nil
}

// within reports whether p is c or below it.
func within(p, c string) bool { return p == c || strings.HasPrefix(p, c+"/") || c == "/" }
