package kernels

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/procgroup"
	"napilab/internal/sandbox"
)

const (
	// tailLines is how many output lines a BuildError keeps.
	tailLines = 200
	// waitDelay bounds how long Wait waits for a killed child to go away.
	waitDelay = 10 * time.Second
)

// command is one child process to run.
type command struct {
	argv []string
	dir  string
	env  []string
	// log receives a copy of every output line; may be nil.
	log io.Writer
	// jail, when set, runs the command in the build sandbox (a user
	// namespace as an unprivileged uid, no network) that sees only these
	// folders besides the system's; see sandbox.Start. Untrusted code
	// (make, scripts of the source tree) always runs jailed.
	jail []sandbox.Mount
	// nice, when above 0, is the niceness of the command's process group,
	// set as it starts (its children inherit it).
	nice int
}

// run starts c in its own process group (killed as a whole on cancel), feeds
// every line of its combined output to onLine and returns the last lines.
// A non-zero exit comes back as *exec.ExitError.
func run(ctx context.Context, c command, onLine func(string)) ([]string, error) {
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Dir, cmd.Env = c.dir, c.env
	procgroup.Set(cmd, procgroup.KillOnCancel(waitDelay))
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("failed to create pipe: %w", err)
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	wait := cmd.Wait
	if c.jail != nil {
		wait, err = sandbox.Start(cmd, c.jail)
	} else {
		err = procgroup.Start(cmd)
	}
	pw.Close()
	if err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", c.argv[0], err)
	}
	if c.nice > 0 { // best effort: a build at the wrong niceness is still a build
		_ = unix.Setpriority(unix.PRIO_PGRP, cmd.Process.Pid, c.nice)
	}
	waited := make(chan error, 1)
	go func() {
		procgroup.KillStragglers(cmd) // they would hold the pipe open
		waited <- wait()
	}()
	t := newTail(tailLines)
	log := c.log
	if _, ok := log.(*logCap); !ok && log != nil {
		log = capLog(log, maxLogBytes)
	}
	r := bufio.NewReaderSize(pr, maxLineBytes)
	for {
		// Read to the end even past the log's cap: make must not block on
		// a full pipe.
		line, rerr := readLine(r)
		if line != "" {
			line = strings.TrimRight(line, "\r\n")
			if log != nil {
				fmt.Fprintln(log, line)
			}
			t.add(line)
			if onLine != nil {
				onLine(line)
			}
		}
		if rerr != nil {
			break
		}
	}
	return t.get(), <-waited
}

const (
	// maxLineBytes caps one output line of a command: the rest of a longer
	// line is dropped (a build may print anything).
	maxLineBytes = 64 << 10
	// maxLogBytes caps what a command's output writes to its log unless the
	// log is a logCap of its own (one for all of a build's commands).
	maxLogBytes = 256 << 20
)

// readLine reads one line of r (a reader of maxLineBytes) with its newline,
// its first maxLineBytes only and a note of what was dropped.
func readLine(r *bufio.Reader) (string, error) {
	b, err := r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return string(b), err
	}
	line := string(b)
	var dropped int64
	for err == bufio.ErrBufferFull {
		b, err = r.ReadSlice('\n')
		dropped += int64(len(b))
	}
	if len(b) > 0 && b[len(b)-1] == '\n' {
		dropped--
	}
	if dropped == 0 {
		return line + "\n", err
	}
	return fmt.Sprintf("%s [%d more bytes of this line dropped]\n", line, dropped), err
}

// logCap is a log that takes at most a set number of bytes in all, then
// says once that the rest is not logged.
type logCap struct {
	w    io.Writer
	left int64
	full bool
}

// capLog returns w taking at most max bytes in all.
func capLog(w io.Writer, max int64) *logCap { return &logCap{w: w, left: max} }

func (l *logCap) Write(p []byte) (int, error) {
	if l.full {
		return len(p), nil
	}
	if int64(len(p)) > l.left {
		l.full = true
		fmt.Fprintf(l.w, "%s\n[log over its cap: the rest of the output is not logged]\n", p[:l.left])
		return len(p), nil
	}
	l.left -= int64(len(p))
	_, err := l.w.Write(p)
	return len(p), err
}

// runMake runs one make invocation and turns a failure into a *BuildError.
func runMake(ctx context.Context, c command, target, logPath string, onLine func(string)) error {
	var cause string
	tailOut, err := run(ctx, c, func(line string) {
		if cause == "" && strings.Contains(line, "error:") {
			cause = strings.TrimSpace(line)
		}
		if onLine != nil {
			onLine(line)
		}
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("make %s interrupted: %w", target, ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &BuildError{Target: target, ExitCode: ee.ExitCode(), Cause: cause, Tail: tailOut, Log: logPath}
	}
	return fmt.Errorf("failed to run make %s: %w", target, err)
}
