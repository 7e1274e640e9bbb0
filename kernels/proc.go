package kernels

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Command is one child process for RunCommand.
type Command struct {
	// Argv is the program and its arguments.
	Argv []string
	// Dir is the working directory; empty means the caller's.
	Dir string
	// Env is the environment; nil means the caller's.
	Env []string
	// Log receives every output line; may be nil.
	Log io.Writer
}

// RunCommand runs c the way the cache runs its builds: in its own process
// group with a parent-death SIGKILL, the whole group killed when ctx ends,
// and a bounded wait for stragglers. It returns the last output lines; a
// non-zero exit comes back as *exec.ExitError.
func RunCommand(ctx context.Context, c Command) ([]string, error) {
	return run(ctx, command{argv: c.Argv, dir: c.Dir, env: c.Env, log: c.Log}, nil)
}

// LockFile takes an exclusive flock on path (created if missing), waiting
// until it is free or ctx ends. Callers must call the returned release.
func LockFile(ctx context.Context, path string) (func(), error) {
	return lockCache(ctx, path)
}

// TempPattern is the os.MkdirTemp pattern for a scratch folder of this
// process: prefix, then "pid<N>-", then the random part. `lab kernel gc`
// removes such folders once process N is gone (see OwnerGone).
func TempPattern(prefix string) string {
	return prefix + "pid" + strconv.Itoa(os.Getpid()) + "-*"
}

// ownerRe finds the owner's pid in a name made from TempPattern.
var ownerRe = regexp.MustCompile(`pid([0-9]+)-[^/]*$`)

// OwnerGone says whether name was made from TempPattern by a process that
// no longer exists. Names without an owner are never gone.
func OwnerGone(name string) bool {
	m := ownerRe.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 {
		return false
	}
	return unix.Kill(pid, 0) == unix.ESRCH
}

// RemoveDeadTemps removes the entries of dir named prefix+TempPattern whose
// owner is gone; errors are ignored (lab gc reports what stays).
func RemoveDeadTemps(dir, prefix string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && OwnerGone(e.Name()) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// describePid is used in gc reasons.
func describePid(name string) string {
	if m := ownerRe.FindStringSubmatch(name); m != nil {
		return fmt.Sprintf("process %s", m[1])
	}
	return "an unknown process"
}

// LockKey takes the lock of one named thing in the cache at root (kind
// "image", say; see lock.go), waiting until it is free or ctx ends, and
// notes doing for waiters. wait, if set, hears whom it waits for, at once
// and then every 30 s. Callers must call the returned release.
func LockKey(ctx context.Context, root, kind, name, doing string, wait func(string)) (func(), error) {
	return layout{root}.lockKey(ctx, kind, name, doing, false, wait)
}
