package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"napilab/internal/procgroup"
	"napilab/internal/wire"
)

// execWaitDelay is how long output may stay open after the program exits (a
// background child holding the pipe).
const execWaitDelay = 2 * time.Second

// execTimeout bounds a program: wire.Exec has no deadline of its own. Its
// process group is killed then.
var execTimeout = 10 * time.Minute

// defaultPath is searched when PATH is unset, as it is for PID 1.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// exec runs x.Argv inside x.Netns and waits for it. A non-zero exit is a
// result, not an error.
func (a *agent) exec(x wire.Exec) (*wire.ExecResult, error) {
	if len(x.Argv) == 0 {
		return nil, fmt.Errorf("exec: empty argv")
	}
	path, err := lookPath(x.Argv[0], searchPath())
	if err != nil {
		return nil, err
	}
	timeout := execTimeout
	if x.Timeout > 0 {
		timeout = x.Timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stdout, stderr := &cappedBuffer{max: wire.OutputMax}, &cappedBuffer{max: wire.OutputMax}
	cmd := exec.CommandContext(ctx, path, x.Argv[1:]...)
	cmd.Args[0] = x.Argv[0]
	cmd.Env = execEnv(append(os.Environ(), x.Env...))
	cmd.Dir = "/"
	if x.Dir != "" {
		cmd.Dir = x.Dir
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// No Pdeathsig: the netns thread that forks it may be retired first.
	procgroup.Set(cmd, procgroup.KillOnCancel(execWaitDelay), procgroup.WithoutPdeathsig())
	// The child is forked from the locked thread and so starts in its netns.
	if err := a.ns.in(x.Netns, func() error { return kids.start(cmd, cmd.Start) }); err != nil {
		// Not the program's doing: an agent fault (%v drops the errno).
		if cmd.Process != nil {
			cancel() // started, but the thread could not leave the netns
			cmd.Wait()
			kids.done(cmd)
		}
		return nil, fmt.Errorf("exec %s: %v", x.Argv[0], err)
	}
	werr := cmd.Wait()
	kids.done(cmd)
	res := &wire.ExecResult{ExitCode: -1, Stdout: stdout.String(), Stderr: stderr.String()}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return res, timeoutError{fmt.Errorf("exec %s: killed after %v", x.Argv[0], timeout)}
	case werr == nil, errors.As(werr, &exitErr), errors.Is(werr, exec.ErrWaitDelay):
		return res, nil
	}
	return res, fmt.Errorf("exec %s: %v", x.Argv[0], werr)
}

// searchPath is PATH, or defaultPath when it is unset.
func searchPath() string {
	if p := os.Getenv("PATH"); p != "" {
		return p
	}
	return defaultPath
}

// execEnv is env with PATH and HOME set (PID 1 starts with neither).
func execEnv(env []string) []string {
	out := env[:len(env):len(env)]
	for _, def := range []string{"PATH=" + defaultPath, "HOME=/root"} {
		key, _, _ := strings.Cut(def, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, key+"=") }) {
			out = append(out, def)
		}
	}
	return out
}

// lookPath finds an executable name in the colon-separated dirs; a name
// with a slash is taken as is.
func lookPath(name, dirs string) (string, error) {
	cands := []string{name}
	if !strings.Contains(name, "/") {
		cands = nil
		for _, d := range filepath.SplitList(dirs) {
			if d != "" {
				cands = append(cands, filepath.Join(d, name))
			}
		}
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return c, nil
		}
	}
	return "", fmt.Errorf("no such program %q in the guest image (the stock image only has /init, the agent)", name)
}

// cappedBuffer keeps the first and the last max/2 bytes written around a
// wire.CutLine (a test's verdict is on its last line), never failing a write
// so the child is not blocked or killed by SIGPIPE.
type cappedBuffer struct {
	head    bytes.Buffer
	tail    []byte // ring of the last max/2 bytes once head is full
	pos     int    // next write position in tail
	wrapped bool
	dropped int
	max     int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	half := c.max / 2
	if room := half - c.head.Len(); room > 0 {
		k := min(len(p), room)
		c.head.Write(p[:k])
		p = p[k:]
	}
	if c.tail == nil && len(p) > 0 {
		c.tail = make([]byte, c.max-half)
	}
	for len(p) > 0 {
		k := copy(c.tail[c.pos:], p)
		if c.wrapped {
			c.dropped += k
		}
		c.pos += k
		p = p[k:]
		if c.pos == len(c.tail) {
			c.pos, c.wrapped = 0, true
		}
	}
	return n, nil
}

func (c *cappedBuffer) String() string {
	if c.tail == nil {
		return c.head.String()
	}
	var b strings.Builder
	b.WriteString(c.head.String())
	if c.dropped == 0 {
		// Nothing was overwritten: the ring holds the bytes in order.
		n := c.pos
		if c.wrapped {
			n = len(c.tail)
		}
		b.Write(c.tail[:n])
		return b.String()
	}
	b.WriteString(wire.CutLine(c.dropped))
	b.Write(c.tail[c.pos:])
	b.Write(c.tail[:c.pos])
	return b.String()
}
