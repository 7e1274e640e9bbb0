package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// buildLab builds the lab binary for a test and returns the project's top
// folder (where the shipped paths resolve) and the binary.
func buildLab(t *testing.T) (root, lab string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	lab = filepath.Join(t.TempDir(), "lab")
	if out, err := exec.Command("go", "build", "-o", lab, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return root, lab
}

// TestLintCommand runs the real lab binary: lint refuses an alias bomb
// (8 levels of aliased parallel: steps) instead of expanding it, and a
// SIGTERM ends a lint at once with 143 (lint has no guest to clean up).
// The minute-long waits are hang checks, not timings.
func TestLintCommand(t *testing.T) {
	root, lab := buildLab(t)
	t.Run("alias bomb", func(t *testing.T) {
		cmd := exec.Command(lab, "scenario", "lint", "scenarios/testdata/limits/alias-bomb.yaml")
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		code := waitExit(t, cmd, nil)
		if code != exitError || !strings.Contains(out.String(), "alias-bomb.yaml:9:46: aliases expand to more than") {
			t.Errorf("exit %d, want %d and the alias at fault:\n%s", code, exitError, out.String())
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		// Lint reads a FIFO that never ends (scenarios may come from a
		// pipe); once lint has opened it, it is waiting inside the command.
		fifo := filepath.Join(t.TempDir(), "scenario.yaml")
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(lab, "scenario", "lint", fifo)
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		code := waitExit(t, cmd, func() {
			openWriter(t, fifo, cmd) // open until the test ends: no EOF
			cmd.Process.Signal(syscall.SIGTERM)
		})
		if code != 128+int(syscall.SIGTERM) || strings.Contains(out.String(), "QEMU") {
			t.Errorf("exit %d after one SIGTERM, want 143 and no word of QEMU:\n%s", code, out.String())
		}
	})
}

// waitExit starts cmd, calls then (if any) and returns cmd's exit code; a
// lab still running after a minute is killed and fails the test.
func waitExit(t *testing.T, cmd *exec.Cmd, then func()) int {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	if then != nil {
		then()
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("%s still running after a minute", strings.Join(cmd.Args, " "))
	}
	return cmd.ProcessState.ExitCode()
}

// openWriter opens the FIFO's write end once cmd has opened its read end,
// and closes it when the test ends.
func openWriter(t *testing.T, fifo string, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			t.Cleanup(func() { unix.Close(fd) })
			return
		}
		if err != unix.ENXIO || time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("lab never opened %s: %v", fifo, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInterruptedRunsLeaveNothing starts `lab run` 20 times and interrupts
// each at a random moment (boot, setup, timeline, evidence) with SIGINT, two
// SIGINTs or SIGKILL, then checks that nothing it started outlived it: no
// process (the test is the children's subreaper, so an orphan of lab becomes
// ours), no temp folder, mount, named netns or host link.
func TestInterruptedRunsLeaveNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a real kernel 20 times")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (taps, namespaces)")
	}
	root, lab := buildLab(t)
	// Build (or find) the kernel and image first, so every interrupt lands
	// in a run, not in a build.
	warm := exec.Command(lab, "run", "scenarios/napi-disable-race.yaml", "--kernel", "kernels/stock-6.1.yaml", "-o", t.TempDir())
	warm.Dir = root
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("warm-up run: %v\n%s", err, out)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)
	before := hostState(t)
	for i := 0; i < 20; i++ {
		mode := []string{"SIGINT", "SIGINT twice", "SIGKILL"}[i%3]
		delay := time.Duration(300+rng.IntN(11700)) * time.Millisecond
		out := t.TempDir()
		cmd := exec.Command(lab, "run", "scenarios/threaded-toggle-under-load.yaml", "--kernel", "kernels/stock-6.1.yaml", "-o", out)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		signalled := time.Now()
		switch mode {
		case "SIGINT":
			cmd.Process.Signal(os.Interrupt)
		case "SIGINT twice":
			cmd.Process.Signal(os.Interrupt)
			time.Sleep(100 * time.Millisecond)
			cmd.Process.Signal(os.Interrupt)
		case "SIGKILL":
			cmd.Process.Kill()
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("run %d (%s after %v): lab did not exit within 90 s\n%s", i, mode, delay, stderr.String())
		}
		took := time.Since(signalled)
		t.Logf("run %d: %s after %v: exit %d after %v", i, mode, delay.Round(time.Millisecond), cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))
		if mode != "SIGKILL" && cmd.ProcessState.ExitCode() != 130 {
			t.Errorf("run %d: %s exited %d, want 130 (interrupted)", i, mode, cmd.ProcessState.ExitCode())
		}
		if mode == "SIGINT twice" && took > 10*time.Second {
			t.Errorf("run %d: a second SIGINT took %v to end lab", i, took)
		}
		if left := orphans(2 * time.Second); len(left) > 0 {
			t.Errorf("run %d (%s after %v): processes outlived lab: %s", i, mode, delay, strings.Join(left, "; "))
		}
		if diff := hostState(t).diff(before); diff != "" {
			t.Errorf("run %d (%s after %v): left behind: %s", i, mode, delay, diff)
			before = hostState(t)
		}
	}
}

// orphans waits up to grace for processes reparented to this test to go
// away, then kills and names those that did not.
func orphans(grace time.Duration) []string {
	deadline := time.Now().Add(grace)
	for {
		var left []string
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			rest := stat[bytes.LastIndexByte(stat, ')')+2:]
			f := strings.Fields(string(rest))
			if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
				continue
			}
			if f[0] == "Z" {
				var ws syscall.WaitStatus
				syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			left = append(left, strconv.Itoa(pid)+" "+strings.ReplaceAll(strings.TrimSpace(string(cmdline)), "\x00", " "))
			pids = append(pids, pid)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
				syscall.Wait4(p, nil, 0, nil)
			}
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// state is what a run may leave on the host.
type state map[string]bool

func hostState(t *testing.T) state {
	s := state{}
	for _, dir := range []string{os.TempDir(), "/run/netns"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if dir != os.TempDir() || strings.HasPrefix(e.Name(), "napilab") {
				s["file "+filepath.Join(dir, e.Name())] = true
			}
		}
	}
	mi, err := os.ReadFile("/proc/1/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mi), "\n") {
		if strings.Contains(l, "napilab") {
			f := strings.Fields(l)
			s["mount "+f[4]] = true
		}
	}
	links, _ := os.ReadDir("/sys/class/net")
	for _, l := range links {
		s["link "+l.Name()] = true
	}
	return s
}

// diff names what s has and old had not.
func (s state) diff(old state) string {
	var extra []string
	for k := range s {
		if !old[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	return strings.Join(extra, ", ")
}

// TestIncludeOutsideClone: a scenario kept outside the clone includes a
// shipped fragment; lab finds the shipped folder beside its binary's
// folder (bin/lab), from --scenarios or $NAPILAB_SCENARIOS, and says where
// it looked when it cannot. With root, the scenario also runs.
func TestIncludeOutsideClone(t *testing.T) {
	root, lab := buildLab(t)
	dir := t.TempDir()
	scen := filepath.Join(dir, "mine.yaml")
	os.WriteFile(scen, []byte("name: mine\ninclude: [fragments/nic.yaml]\nparams: {queues: \"1\", nic_rate: \"500\"}\n"+
		"timeline:\n  - start: nic-udp\n  - sleep: 1s\n  - stop: nic-udp\nasserts:\n  - no-splat: {}\n"+
		"  - delta: {metric: netdev.eth0.rx_packets, min: 100}\n"), 0o644)
	lint := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(lab, append([]string{"scenario", "lint"}, append(args, scen)...)...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := lint(nil); err == nil || !strings.Contains(out, "include fragments/nic.yaml: not found in "+filepath.Join(dir, "fragments/nic.yaml")) {
		t.Errorf("a lab binary outside the clone found the fragment, or did not say where it looked: %v\n%s", err, out)
	}
	shipped := filepath.Join(root, "scenarios")
	if out, err := lint([]string{"NAPILAB_SCENARIOS=" + shipped}); err != nil {
		t.Errorf("$NAPILAB_SCENARIOS: %v\n%s", err, out)
	}
	if out, err := lint(nil, "--scenarios", shipped); err != nil {
		t.Errorf("--scenarios: %v\n%s", err, out)
	}
	inClone := filepath.Join(root, "bin", "lab-include-test")
	if out, err := exec.Command("go", "build", "-o", inClone, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	defer os.Remove(inClone)
	cmd := exec.Command(inClone, "scenario", "lint", scen)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("bin/lab of the clone did not find the shipped fragments: %v\n%s", err, out)
	}
	if testing.Short() || os.Geteuid() != 0 {
		return
	}
	cmd = exec.Command(inClone, "run", scen, "-k", filepath.Join(root, "kernels/stock-6.1.yaml"), "-o", filepath.Join(dir, "runs"))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS  mine") {
		t.Errorf("run from outside the clone: %v\n%s", err, out)
	}
}
