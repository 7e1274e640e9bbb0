// Package runner boots a lab kernel in QEMU with a scenario's NICs, drives
// the guest agent through the scenario's timeline, gathers evidence and
// decides the verdict.
//
//	res := runner.Run(ctx, runner.Config{Scenario: s, BzImage: k, Initramfs: img, OutDir: dir})
//
// Nothing it starts (QEMU, taps, the namespace, sockets) outlives Run.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/model"
	"napilab/results/report"
	"napilab/results/splat"
	"napilab/runner/vm"
	"napilab/scenarios"
)

// DefaultKselftestRetries is lab run's --kselftest-retries.
const DefaultKselftestRetries = 1

// Config is one run.
type Config struct {
	Scenario   *scenarios.Scenario
	Kernel     results.Kernel // Spec, Key and BzImage
	KernelSpec string         // the spec file, recorded for lab repro
	Cmdline    []string       // extra kernel command line from the kernel spec
	Initramfs  string
	ImageHash  string
	OutDir     string            // receives console.log, qemu.cmdline, samples.jsonl, result.json, junit.xml
	Params     map[string]string // the parameter overrides the scenario was opened with
	Accel      string            // kvm, tcg or "" (auto)
	Machine    string            // a name in machines, or "" ($NAPILAB_MACHINE, else vm.DefaultMachine)
	QEMU       string            // the QEMU binary, default qemu-system-x86_64
	Seed       int64             // overrides the scenario seed (lab repro), 0 = keep
	// MinMemoryMB raises the guest's RAM for an image that needs it (the
	// Debian initramfs lives in guest memory).
	MinMemoryMB int
	// KselftestTimeouts is each kselftest collection's per-test timeout (its
	// settings file); kselftest steps without a deadline get it plus slack.
	KselftestTimeouts map[string]time.Duration
	// Shell hands the serial console to the user's terminal (the agent runs
	// the image's shell on it) instead of running the timeline; the run
	// ends when the guest powers off.
	Shell bool
	// NoPolls skips the who-polled sampler that every run has, unless an
	// assertion needs it (overhead comparisons).
	NoPolls bool
	// Cover are the functions the kernel's series changes, each with the
	// symbols whose calls the run counts for it (results.CoverFunc).
	Cover []results.CoverFunc
	// Logf receives one-line progress messages; nil = silent.
	Logf func(format string, args ...any)
	// KselftestRetries is how many times a failed kselftest runs again in
	// the same guest (known-flaky tests may get more); 0 = none. lab run
	// gives DefaultKselftestRetries.
	KselftestRetries int
	// Strict counts a flake (a kselftest or a run that passed on retry) as
	// a failure.
	Strict bool
	// kselftestHook lets tests change a kselftest attempt's command.
	kselftestHook func(name string, attempt int, x *wire.Exec)
	// newGuest starts the guest; nil = (*run).startQEMU (tests run the
	// agent in this process).
	newGuest func(r *run, accel string) (Guest, error)
	// setupFloor replaces minSetupLimit when set (in-process tests,
	// whose guest registers nothing slowly).
	setupFloor time.Duration
	// bootLimit overrides the boot timeout (tests); 0 = bootTimeout.
	bootLimit time.Duration
}

// Boot and shutdown limits under TCG; KVM divides them by kvmSpeedup.
const (
	bootTimeout     = 90 * time.Second
	shutdownTimeout = 20 * time.Second
	kvmSpeedup      = 3
	evidenceTimeout = 10 * time.Second
)

// baseCmdline is what every lab guest boots with. Under TCG the watchdogs
// need slack or they report the emulator's slowness, and the IO-APIC timer
// check (a timer interrupt within a busy wait) fails on a loaded host: a
// q35 guest then panics "IO-APIC + timer doesn't work!" (no_timer_check).
var baseCmdline = []string{"console=ttyS0", "panic=-1", "watchdog_thresh=30",
	"rcupdate.rcu_cpu_stall_timeout=60", "printk.devkmsg=on", "no_timer_check"}

// Run executes the scenario and always returns a result; infrastructure
// problems give verdict ERROR.
func Run(ctx context.Context, cfg Config) *results.Result {
	s := cfg.Scenario
	r := &results.Result{
		Scenario: s.Name, ScenarioFile: s.Path, Params: cfg.Params, Kernel: cfg.Kernel, Image: cfg.ImageHash,
		Started: time.Now(),
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	run := &run{cfg: cfg, s: s, res: r}
	err := run.do(ctx)
	if err != nil && ctx.Err() != nil {
		err = infra("interrupted: %v", ctx.Err())
	}
	r.Timings.Total = time.Since(r.Started).Seconds()
	run.finish(err)
	// junit.xml and the reports, then result.json last: a write that fails
	// turns r into ERROR first, so result.json agrees with the verdict
	// returned.
	report.Save(cfg.OutDir, r)
	return r
}

// infraError marks a failure of the lab or host (verdict ERROR).
type infraError struct{ err error }

func (e *infraError) Error() string { return e.err.Error() }
func (e *infraError) Unwrap() error { return e.err }

func infra(format string, args ...any) error { return &infraError{fmt.Errorf(format, args...)} }

// run is the state of one Run.
type run struct {
	cfg     Config
	s       *scenarios.Scenario
	res     *results.Result
	guest   Guest
	ctl     *control // the guest's channel
	host    *vm.HostNet
	tl      *timeline
	hello   *wire.Hello
	leak    leakCheck
	cover   *results.Coverage // the cover probes set up, before their counts
	readyAt time.Time         // the agent's ready event arrived (host clock)
	setupAt time.Time         // the topology setup started
}

// bootPhases splits a boot of boot seconds (host clock) by the guest's
// dates in hello; nil when the agent did not date its start.
func bootPhases(boot float64, hello wire.Hello) *results.BootPhases {
	if hello.Exec <= 0 || hello.Main < hello.Exec || hello.Uptime < hello.Main {
		return nil
	}
	return &results.BootPhases{Before: max(boot-hello.Uptime, 0), Kernel: hello.Exec,
		Agent: hello.Uptime - hello.Exec, Runtime: hello.Main - hello.Exec}
}

// phasesNote is p for the run's log, "" for nil.
func phasesNote(p *results.BootPhases) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf(" (before the kernel %.2fs, kernel %.2fs, agent %.2fs)", p.Before, p.Kernel, p.Agent)
}

func (r *run) do(ctx context.Context) error {
	if err := os.MkdirAll(r.cfg.OutDir, 0o755); err != nil {
		return infra("failed to create the run folder: %w", err)
	}
	os.WriteFile(filepath.Join(r.cfg.OutDir, "scenario.yaml"), r.s.Source, 0o644)
	accel, err := vm.PickAccel(r.cfg.Accel)
	if err != nil {
		return &infraError{err}
	}
	r.res.Accel = accel
	var taps []vm.TapSpec
	for i, n := range r.s.Topology.NICs {
		gip, _, _ := net.ParseCIDR(n.Address)
		t := vm.TapSpec{Name: fmt.Sprintf("tap%d", i), Queues: n.Queues, HostAddr: n.Host, GuestMAC: n.MAC}
		if gip != nil {
			t.GuestIP = gip.String()
		}
		taps = append(taps, t)
	}
	var routes []wire.Route
	for _, rt := range r.s.Topology.Routes {
		if rt.Host {
			routes = append(routes, wire.Route{To: rt.To, Via: rt.Via})
		}
	}
	r.host, err = vm.NewHostNet(taps, routes)
	if err != nil {
		return &infraError{err}
	}
	defer r.host.Close()

	start := r.cfg.newGuest
	if start == nil {
		start = (*run).startQEMU
	}
	bootStart := time.Now()
	g, err := start(r, accel)
	if err != nil {
		return err
	}
	r.guest, r.ctl = g, g.channel()
	defer g.close()
	err = r.boot(ctx, accel)
	if err != nil {
		return err
	}
	r.res.Timings.Boot = time.Since(bootStart).Seconds()
	r.res.Timings.BootPhases = bootPhases(r.res.Timings.Boot, *r.hello)
	r.res.Kernel.Release = r.hello.Kernel
	r.cfg.Logf("agent ready after %.1fs%s: kernel %s, %d cpus", r.res.Timings.Boot, phasesNote(r.res.Timings.BootPhases),
		r.hello.Kernel, r.hello.CPUs)

	if err := r.setup(ctx); err != nil {
		return err
	}
	r.snapshotDevices(ctx, "after setup")
	if r.cfg.Shell {
		r.cfg.Logf("shell ready: the topology is up, the agent still answers; power off with: echo o > /proc/sysrq-trigger")
		select {
		case <-r.guest.ended():
		case <-ctx.Done():
		}
		return nil
	}
	seed := r.s.Seed
	if r.cfg.Seed != 0 {
		seed = r.cfg.Seed
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	r.res.Seed = seed
	r.writeReplay()
	if err := r.setupProbes(ctx, seed); err != nil {
		return err
	}
	if err := r.setupCover(ctx); err != nil {
		return err
	}
	r.tl = newTimeline(r.s, seed, r.ctl, r.host, r.cfg.Logf)
	r.tl.ks.timeouts, r.tl.outDir, r.tl.slow = r.cfg.KselftestTimeouts, r.cfg.OutDir, r.res.Accel == "tcg"
	r.tl.noPolls = r.cfg.NoPolls && !r.s.NeedsPolls()
	r.tl.covered = r.cover != nil
	r.tl.kernel = model.KernelOf(r.hello.Kernel)
	r.tl.cpu = r.guest.cpuUse
	r.tl.ks.retries, r.tl.ks.strict, r.tl.ks.spec, r.tl.ks.hook = r.cfg.KselftestRetries, r.cfg.Strict, r.cfg.Kernel.Spec, r.cfg.kselftestHook
	err = r.tl.run(ctx)
	r.res.Timings.Timeline = r.tl.elapsed()
	var hang *hangError
	if errors.As(err, &hang) {
		// Evidence comes from the live guest, before anything is torn down.
		r.hangEvidence(ctx, hang)
	}
	if err != nil {
		return err
	}
	r.kmemleakScan(ctx)
	r.snapshotDevices(ctx, "at end")
	r.shutdown(ctx, accel)
	return nil
}

// writeReplay saves what lab repro needs, before the timeline can fail.
func (r *run) writeReplay() {
	b, err := json.MarshalIndent(results.Replay{KernelSpec: r.cfg.KernelSpec, Flavour: r.cfg.Kernel.Flavour, KernelKey: r.cfg.Kernel.Key,
		ImageHash: r.cfg.ImageHash, Scenario: r.s.Path, Params: r.cfg.Params, Seed: r.res.Seed,
		Accel: r.res.Accel, QEMU: r.res.QEMU, Commit: r.cfg.Kernel.Commit, Dirty: r.cfg.Kernel.Dirty}, "", "  ")
	if err == nil {
		os.WriteFile(filepath.Join(r.cfg.OutDir, "replay.json"), append(b, '\n'), 0o644)
	}
}

// snapshotDevices records the guest's devices: state, threaded, queues, NAPI kthreads.
func (r *run) snapshotDevices(ctx context.Context, when string) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var devs []wire.Device
	if err := r.ctl.call(cctx, wire.OpDevices, nil, &devs); err != nil {
		return
	}
	if r.res.Devices == nil {
		r.res.Devices = map[string][]wire.Device{}
	}
	r.res.Devices[when] = append(r.res.Devices[when], devs...)
}

// bootError is a kernel that did not boot while QEMU itself ran fine: it
// died before its console started (a triple fault), or started and died or
// hung with a splat before the agent was ready. It implicates the kernel.
type bootError struct{ msg string }

func (e *bootError) Error() string { return "the kernel did not boot: " + e.msg }

// noInit matches the panics of an initramfs without a working /init: the
// lab's image, not the kernel.
var noInit = regexp.MustCompile(`.*(No working init found|Unable to mount root fs).*`)

// boot waits for the agent's ready event, or for the guest to die, and
// says whose fault a boot without an agent is:
//   - QEMU exits with an error status (bad binary, bad arguments): ERROR;
//   - QEMU exits cleanly (the guest reset or powered off under -no-reboot)
//     before any console output: FAIL, the kernel died before its console
//     started; after "Linux version": FAIL, it started and died; on a
//     panic for a missing /init: ERROR, the lab's initramfs;
//   - no agent within the limit: FAIL when the console has a splat, else
//     ERROR (a slow host and a kernel hung without a word look alike); a
//     kernel that started is asked for SysRq-w and -l first, so console.log
//     shows where it waits.
func (r *run) boot(ctx context.Context, accel string) error {
	limit := bootTimeout
	if accel == "kvm" {
		limit /= kvmSpeedup
	}
	if r.cfg.bootLimit > 0 {
		limit = r.cfg.bootLimit
	}
	bctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	go func() {
		select {
		case <-r.guest.ended():
			cancel()
		case <-bctx.Done():
		}
	}()
	var err error
	r.hello, err = r.ctl.waitReady(bctx)
	if err == nil {
		r.readyAt = time.Now()
		return nil
	}
	if ctx.Err() != nil {
		return infra("interrupted while booting")
	}
	// The control socket closes a moment before QEMU is reaped.
	select {
	case <-r.guest.ended():
	case <-time.After(2 * time.Second):
	}
	text := string(r.guest.output().text())
	started := strings.Contains(text, "Linux version")
	waitErr, stderr := r.guest.exitStatus()
	ended := exited(r.guest)
	switch {
	case ended && waitErr != nil:
		return infra("qemu failed: %v\n%s", waitErr, stderr)
	case ended && noInit.MatchString(text):
		return infra("the initramfs %s has no working /init: %s", r.cfg.Initramfs, strings.TrimSpace(noInit.FindString(text)))
	case ended && !started:
		msg := "QEMU ran fine, but the guest stopped before the kernel's console started (a triple fault or a bzImage that is no kernel)"
		if stderr != "" {
			msg += "; qemu said: " + stderr
		}
		return &bootError{msg}
	case ended:
		return &bootError{"the guest stopped before the agent was ready"}
	}
	what, evidence := "printed nothing", ""
	if started {
		what, evidence = "started", r.bootEvidence(ctx)
	}
	if sp := splat.Find(r.guest.output().text()); len(sp) > 0 {
		return &bootError{fmt.Sprintf("%s, and no agent after %v", sp[0].Title, limit)}
	}
	return infra("no agent after %v: the kernel %s, without a splat (a slow host and a hung kernel look alike)%s", limit, what, evidence)
}

// bootEvidence sends SysRq-w and -l through QEMU's keyboard to a kernel
// that started but brought up no agent, waits for the dumps to reach the
// console, and says where they are.
func (r *run) bootEvidence(ctx context.Context) string {
	ctx, cancel := cleanupCtx(ctx, evidenceTimeout)
	defer cancel()
	con := r.guest.output()
	from := con.count()
	switch err := r.guest.sysrq(ctx, "w", "l"); {
	case errors.Is(err, errNoSysrq):
		return ""
	case err != nil:
		return fmt.Sprintf("; SysRq-w and -l could not be sent: %v", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	got := con.waitFor(wctx, "sysrq: Show backtrace of all active CPUs", from)
	wcancel()
	if !got {
		return "; it did not answer SysRq-w and -l"
	}
	select { // the backtraces follow their header
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	return "; its blocked tasks and CPUs' backtraces (SysRq-w, -l) are in console.log"
}

// setup builds the topology in the guest.
func (r *run) setup(ctx context.Context) error {
	t := wire.Topology{Netns: r.s.Topology.Netns, Sysctls: r.s.Machine.Sysctls}
	for _, n := range r.s.Topology.NICs {
		t.NICs = append(t.NICs, wire.NIC{Name: n.Name, MAC: n.MAC, Address: n.Address, GRO: n.GRO, Features: n.Features})
	}
	for _, v := range r.s.Topology.Veths {
		t.Veths = append(t.Veths, wire.Veth{Queues: v.Queues,
			A:           wire.End{Name: v.Name, Netns: v.Netns, Address: v.Address, GRO: v.GRO, Features: v.Features},
			B:           wire.End{Name: v.Peer.Name, Netns: v.Peer.Netns, Address: v.Peer.Address, GRO: v.Peer.GRO, Features: v.Peer.Features},
			StaticNeigh: v.StaticNeigh})
	}
	for _, rt := range r.s.Topology.Routes {
		if !rt.Host {
			t.Routes = append(t.Routes, wire.Route{Netns: rt.Netns, To: rt.To, Via: rt.Via})
		}
	}
	r.setupAt = time.Now()
	if err := r.boundedCall(ctx, setupStep, 0, r.setupLimit(), wire.OpSetup, t, nil); err != nil {
		var h *hangError
		if errors.As(err, &h) {
			return h
		}
		return fmt.Errorf("topology setup failed: %w", err)
	}
	return nil
}

// setupLimit bounds the calls before the timeline (the topology, the
// probes): three step deadlines, at least minSetupLimit.
func (r *run) setupLimit() time.Duration {
	floor := minSetupLimit
	if r.cfg.setupFloor > 0 {
		floor = r.cfg.setupFloor
	}
	return max(r.s.Defaults.Deadline.D()*3, floor)
}

// minSetupLimit is the least time setup calls get: registering a probe's
// BPF program took over 15 s on the 6.1 debug flavour under TCG (KASAN,
// lockdep), where a scenario with 5 s deadlines gave it 15 s.
const minSetupLimit = time.Minute

// boundedCall makes a guest call outside the timeline under limit. Past
// it, the call is a hang of step (line), its evidence gathered while the
// guest is live and judged as a step's (judgeHang).
func (r *run) boundedCall(ctx context.Context, step string, line int, limit time.Duration, op string, args, out any) error {
	read := func() (vm.CPUUse, error) { return vm.CPUUse{}, vm.ErrNoCPUUse }
	if r.guest != nil {
		read = r.guest.cpuUse
	}
	from, err0 := read()
	began := time.Now()
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := r.ctl.call(cctx, op, args, out)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		h := &hangError{step: step, line: line, deadline: limit, facts: hangFacts{share: measureShare(read, from, err0 == nil, began, r.s.Machine.CPUs)}}
		r.hangEvidence(ctx, h)
		return h
	}
	return err
}

// shutdown asks the agent to power off and waits for QEMU, reading late
// console output on the way, for shutdownTimeout or until the run is
// aborted; then QEMU is killed.
func (r *run) shutdown(ctx context.Context, accel string) {
	limit := shutdownTimeout
	if accel == "kvm" {
		limit /= kvmSpeedup
	}
	ctx, cancel := cleanupCtx(ctx, limit)
	defer cancel()
	r.ctl.call(ctx, wire.OpPoweroff, nil, nil)
	select {
	case <-r.guest.ended():
	case <-ctx.Done():
	}
	r.guest.stop(0)
}
