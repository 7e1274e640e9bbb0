package patches

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"napilab/internal/procgroup"
	"napilab/internal/sandbox"
)

const (
	// cmdTimeout bounds one patch or cp run; cp -al of a kernel tree takes seconds.
	cmdTimeout = 10 * time.Minute
	// waitDelay bounds how long Wait waits for a killed child's output.
	waitDelay = 5 * time.Second
)

// run runs argv in dir with stdin, in its own process group that is killed
// as a whole when ctx ends, and returns the combined output and exit code.
// A non-zero exit is not an error; failing to run or a cancelled ctx is.
// When jailed, argv runs in the build sandbox and reaches only dir (see
// sandbox.Start): patch reads a user's series, which may aim anywhere.
func run(ctx context.Context, dir string, stdin []byte, jailed bool, argv ...string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	procgroup.Set(cmd, procgroup.KillOnCancel(waitDelay))
	err := start(cmd, dir, jailed)
	if ctx.Err() != nil {
		return out.String(), -1, fmt.Errorf("%s interrupted: %w", argv[0], ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return out.String(), ee.ExitCode(), nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		return "", -1, fmt.Errorf("required tool %q not found in PATH: install it with: apt-get install %s", argv[0], packageOf(argv[0]))
	}
	if err != nil {
		return out.String(), -1, fmt.Errorf("failed to run %s: %w\n%s", argv[0], err, out.String())
	}
	return out.String(), 0, nil
}

// start runs cmd to its end, in the sandbox when jailed.
func start(cmd *exec.Cmd, dir string, jailed bool) error {
	if !jailed {
		return procgroup.Run(cmd)
	}
	wait, err := sandbox.Start(cmd, sandbox.Writable(dir))
	if err != nil {
		return err
	}
	return wait()
}

// childEnv is the environment for patch and cp: C locale, so that patch's
// messages parse, and none of the variables that change patch's behaviour.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "POSIXLY_CORRECT", k == "PATCH_GET", k == "VERSION_CONTROL", k == "PATCH_VERSION_CONTROL",
			k == "SIMPLE_BACKUP_SUFFIX", k == "LANGUAGE", k == "LANG", strings.HasPrefix(k, "LC_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "PATCH_GET=0")
}

// packageOf names the Debian package of a tool this package runs.
func packageOf(tool string) string {
	if tool == "cp" {
		return "coreutils"
	}
	return tool
}

// linkCopy fills the existing dir dst with a hardlink copy of src (cp -al)
// and gives dst src's permissions.
func linkCopy(ctx context.Context, src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("failed to read source tree: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("source tree %s is not a folder", src)
	}
	out, code, err := run(ctx, "", nil, false, "cp", "-al", src+"/.", dst)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("failed to hardlink-copy %s to %s (cp -al needs both on one file system): exit code %d\n%s",
			src, dst, code, strings.TrimSpace(out))
	}
	if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("failed to chmod %s: %w", dst, err)
	}
	// patch runs sandboxed: it may replace files of dst (a new file
	// renamed over the old) but not write into the hardlinked ones,
	// which are the pristine tree's.
	return sandbox.OwnDirs(dst)
}
