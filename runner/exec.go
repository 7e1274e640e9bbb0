package runner

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/scenarios"
)

const (
	// execKeep is how many of an exec step's first runs keep their output;
	// past them only the latest run's is kept, so a step repeated with
	// every leaves at most execKeep+1 files.
	execKeep = 3
	// execHead bounds each stream in the result; the file has the rest.
	execHead = 4 << 10
)

// callExec runs a program in the guest. The streams are bounded again here:
// the guest is not trusted to have done it. A program the agent killed
// comes back with its output and an error.
func (t *timeline) callExec(ctx context.Context, x wire.Exec) (wire.ExecResult, error) {
	var res wire.ExecResult
	err := t.ctl.call(ctx, wire.OpExec, x, &res)
	res.Stdout, res.Stderr = wire.Clip(res.Stdout), wire.Clip(res.Stderr)
	return res, err
}

// exitError is a program in the guest that exited non-zero: a check the
// scenario made failed (FAIL, like a failing kselftest). A program the image
// lacks or the agent killed at its timeout comes back as a *guestError of
// the agent's kind instead (ERROR).
type exitError struct {
	argv0 string
	code  int
	tail  string // the output's last lines
}

func (e *exitError) Error() string { return fmt.Sprintf("%s exited %d: %s", e.argv0, e.code, e.tail) }

// exec runs an exec step's program once (run is from 1) and keeps its
// output; a non-zero exit fails the step with the output's last lines.
func (t *timeline) exec(ctx context.Context, st *scenarios.Step, run int) error {
	x := wire.Exec{Netns: st.Exec.Netns, Argv: st.Exec.Argv}
	res, err := t.callExec(ctx, x)
	text := execText(res)
	if err == nil || text != "" {
		if werr := t.execLog(st).add(x, run, res); werr != nil {
			t.logf("exec output of line %d: %v", st.Pos.Line, werr)
		}
	}
	switch {
	case err != nil && text != "":
		return fmt.Errorf("%w: %s", err, lastLines(text, 5))
	case err != nil:
		return err
	case res.ExitCode != 0:
		return &exitError{argv0: x.Argv[0], code: res.ExitCode, tail: lastLines(text, 5)}
	}
	return nil
}

// execText is a program's stdout followed by its stderr.
func execText(res wire.ExecResult) string {
	if res.Stdout != "" && res.Stderr != "" && !strings.HasSuffix(res.Stdout, "\n") {
		return res.Stdout + "\n" + res.Stderr
	}
	return res.Stdout + res.Stderr
}

// execLog returns the output log of an exec step, named after its line (a
// step of an included file may share the line of another).
func (t *timeline) execLog(st *scenarios.Step) *execLog {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.execLogs[st]; l != nil {
		return l
	}
	if t.execLogs == nil {
		t.execLogs = map[*scenarios.Step]*execLog{}
	}
	taken := func(stem string) bool {
		for _, l := range t.execLogs {
			if l.stem == stem {
				return true
			}
		}
		return false
	}
	stem := strconv.Itoa(st.Pos.Line)
	for k := 2; taken(stem); k++ {
		stem = fmt.Sprintf("%d.%d", st.Pos.Line, k)
	}
	l := &execLog{dir: t.outDir, stem: stem}
	t.execLogs[st] = l
	return l
}

// execOutputs returns what an exec step's runs printed.
func (t *timeline) execOutputs(st *scenarios.Step) []results.ExecOutput {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.execLogs[st]; l != nil {
		return slices.Clone(l.kept)
	}
	return nil
}

// execLog keeps the outputs of one exec step's runs, a file each under
// exec/ in the run folder: the first execKeep runs' and the latest run's.
// Its runs are sequential: it is not safe for concurrent use.
type execLog struct {
	dir  string // the run folder; "" keeps no files
	stem string // file names are exec/<stem>-<run>.log
	kept []results.ExecOutput
}

// add keeps run's output, replacing the latest one past the first execKeep.
// The error is a file that could not be written or removed; the output is
// recorded all the same.
func (l *execLog) add(x wire.Exec, run int, res wire.ExecResult) error {
	out := results.ExecOutput{Run: run, ExitCode: res.ExitCode}
	var err error
	if l.dir != "" {
		out.File = path.Join("exec", fmt.Sprintf("%s-%d.log", l.stem, run))
		if err = writeExecLog(filepath.Join(l.dir, out.File), x, res); err != nil {
			out.File = ""
		}
	}
	out.Stdout, out.Stderr = head(res.Stdout, execHead, out.File), head(res.Stderr, execHead, out.File)
	if len(l.kept) > execKeep {
		last := l.kept[len(l.kept)-1]
		if last.File != "" {
			if rerr := os.Remove(filepath.Join(l.dir, last.File)); rerr != nil && err == nil {
				err = fmt.Errorf("failed to remove the previous run's output: %w", rerr)
			}
		}
		l.kept = l.kept[:len(l.kept)-1]
	}
	l.kept = append(l.kept, out)
	return err
}

// writeExecLog writes a run's command, exit code and both streams to file.
func writeExecLog(file string, x wire.Exec, res wire.ExecResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\n", quoteArgv(x.Argv))
	if x.Netns != "" {
		fmt.Fprintf(&b, "netns: %s\n", x.Netns)
	}
	fmt.Fprintf(&b, "exit: %d\n", res.ExitCode)
	for _, s := range []struct{ name, text string }{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if s.text == "" {
			continue
		}
		fmt.Fprintf(&b, "--- %s ---\n%s", s.name, s.text)
		if !strings.HasSuffix(s.text, "\n") {
			b.WriteString("\n")
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("failed to write exec output: %w", err)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("failed to write exec output: %w", err)
	}
	return nil
}

// quoteArgv joins argv, quoting the words a shell would split or expand.
func quoteArgv(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`;&|<>()*?[]#~!{}") {
			words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}

// head is s's first n bytes (cut at a character boundary) and a line saying
// how many more file holds.
func head(s string, n int, file string) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	where := "were not kept"
	if file != "" {
		where = "are in " + file
	}
	return fmt.Sprintf("%s\n[napilab: %d more bytes %s]\n", s[:n], len(s)-n, where)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
