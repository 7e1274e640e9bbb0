package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"napilab/kernels"
)

// Guest is a started lab guest as a run drives it: the agent's control
// channel, the console, and whether the machine still runs. A run starts
// one where it would start QEMU (Config.newGuest) and talks to the guest
// only through it. The QEMU guest is *vm; tests run the real agent in this
// process (inprocess_test.go).
type Guest interface {
	// channel is the host end of the agent's control channel.
	channel() *control
	// output is the guest's console as it arrives.
	output() *console
	// ended is closed once the guest died or powered off.
	ended() <-chan struct{}
	// exitStatus says how an ended guest ended: its machine's error (nil:
	// a clean exit, as a reset or a poweroff is) and what the machine said.
	exitStatus() (err error, said string)
	// cpuUse is what the host's scheduler gave the machine so far (QEMU's
	// threads); errNoCPUUse when the guest cannot say.
	cpuUse() (cpuUse, error)
	// sysrq sends SysRq keys around the agent (QEMU's keyboard), for when
	// the agent does not answer; errNoSysrq when the guest has no way.
	sysrq(ctx context.Context, keys ...string) error
	// stop waits up to grace for the guest to end, then ends it.
	stop(grace time.Duration)
	// close stops the guest and releases what it holds; callers must call it.
	close()
}

// errNoSysrq is a guest without a way to SysRq around its agent.
var errNoSysrq = errors.New("no SysRq around the agent")

// exited says whether g has ended.
func exited(g Guest) bool {
	select {
	case <-g.ended():
		return true
	default:
		return false
	}
}

// startQEMU boots the run's kernel in QEMU: the Guest of every real run.
// The agent's channel and the monitor are socket pairs QEMU inherits: no
// socket file, so nothing on disk to leave behind or to share with QEMU's
// uid.
func (r *run) startQEMU(accel string) (Guest, error) {
	ctlHost, ctlQEMU, err := socketPair()
	if err != nil {
		return nil, infra("failed to create the control channel: %w", err)
	}
	defer ctlQEMU.Close()
	ctl := newControl(ctlHost)
	monHost, monQEMU, err := socketPair()
	if err != nil {
		ctl.Close()
		return nil, infra("failed to create the monitor channel: %w", err)
	}
	defer monQEMU.Close()
	// What a QEMU that did not start leaves is closed.
	v := &vm{ctl: ctl, mon: newMonitor(monHost)}
	ok := false
	defer func() {
		if !ok {
			v.close()
		}
	}()
	// No prune removes the image, no GC the kernel, while this run boots them.
	var holds []func()
	for _, path := range []string{r.cfg.Initramfs, r.cfg.Kernel.BzImage} {
		if release, err := kernels.Hold(path); err == nil {
			holds = append(holds, release)
		}
	}
	v.release = func() {
		for _, release := range holds {
			release()
		}
	}

	machine, err := pickMachine(r.cfg.Machine)
	if err != nil {
		return nil, &infraError{err}
	}
	// Unreadable, it sets nothing: the bzImage boots without tuning.
	kc, _ := kernels.ReadConfig(r.cfg.Kernel.BzImage)
	q := &QEMU{Binary: r.cfg.QEMU, Accel: accel, Machine: machine, CPUs: r.s.Machine.CPUs, MemoryMB: max(r.s.Machine.MemoryMB, r.cfg.MinMemoryMB),
		Kernel: machineFor(machine).kernelImage(r.cfg.Kernel.BzImage, kc), Initrd: r.cfg.Initramfs, Control: ctlQEMU, Monitor: monQEMU,
		Append:      strings.Join(r.cmdline(kc), " "),
		Interactive: r.cfg.Shell}
	if r.cfg.Shell {
		q.Append += " napilab.shell=1"
	}
	for i, t := range r.host.taps {
		n := r.s.Topology.NICs[i]
		q.NICs = append(q.NICs, QEMUNIC{MAC: n.MAC, Queues: t.Queues, NoEventIdx: n.EventIdx != nil && !*n.EventIdx})
	}
	r.res.QEMU = q.Cmdline()
	os.WriteFile(filepath.Join(r.cfg.OutDir, "qemu.cmdline"), []byte(r.res.QEMU+"\n"), 0o644)
	if v.logFile, err = os.Create(filepath.Join(r.cfg.OutDir, "console.log")); err != nil {
		return nil, infra("failed to create console.log: %w", err)
	}

	r.cfg.Logf("booting %s (%s, %d cpus)", filepath.Join(filepath.Base(filepath.Dir(q.Kernel)), filepath.Base(q.Kernel)), accel, q.CPUs)
	started, err := q.start(v.logFile)
	// QEMU has its copies: lab's own would keep the channels open after QEMU died.
	ctlQEMU.Close()
	monQEMU.Close()
	if err != nil {
		return nil, &infraError{err}
	}
	started.ctl, started.mon, started.logFile, started.release = v.ctl, v.mon, v.logFile, v.release
	ok = true
	return started, nil
}

// cmdline is the guest kernel's command line: the lab's words, the boot
// tuning for its build's config kc, then the kernel spec's and the
// scenario's, which win.
func (r *run) cmdline(kc kernels.BuildConfig) []string {
	words := append(append([]string{}, baseCmdline...), bootTuning(kc)...)
	return append(append(words, r.cfg.Cmdline...), r.s.Machine.Cmdline...)
}

func (v *vm) channel() *control      { return v.ctl }
func (v *vm) output() *console       { return v.console }
func (v *vm) ended() <-chan struct{} { return v.done }

func (v *vm) exitStatus() (error, string) {
	if v.stderr == nil {
		return v.waitErr, ""
	}
	return v.waitErr, strings.TrimSpace(v.stderr.String())
}

// cpuUse reads QEMU's threads' schedstat.
func (v *vm) cpuUse() (cpuUse, error) {
	if v.cmd == nil || v.cmd.Process == nil || exited(v) {
		return cpuUse{}, errNoCPUUse
	}
	return readCPUUse(v.cmd.Process.Pid)
}

// sysrq sends the keys through QEMU's monitor.
func (v *vm) sysrq(ctx context.Context, keys ...string) error {
	if v.mon == nil {
		return errNoSysrq
	}
	return v.mon.sysrq(ctx, keys...)
}

// close kills QEMU if it still runs, then closes the channels and
// console.log and drops the hold on the image.
func (v *vm) close() {
	if v.done != nil {
		v.stop(0)
	}
	if v.logFile != nil {
		v.logFile.Close()
	}
	if v.mon != nil {
		v.mon.Close()
	}
	if v.ctl != nil {
		v.ctl.Close()
	}
	if v.release != nil {
		v.release()
	}
}
