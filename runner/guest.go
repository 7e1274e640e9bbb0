package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"napilab/kernels"
	"napilab/runner/vm"
)

// Guest is a started lab guest as a run drives it: the agent's control
// channel, the console, and whether the machine still runs. A run starts
// one where it would start QEMU (Config.newGuest) and talks to the guest
// only through it. The QEMU guest is *qemuGuest; tests run the real agent in this
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
	// vm.CPUUse is what the host's scheduler gave the machine so far (QEMU's
	// threads); vm.ErrNoCPUUse when the guest cannot say.
	cpuUse() (vm.CPUUse, error)
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

// qemuGuest is the Guest of every real run: a QEMU, the agent's channel,
// the console, and what lab holds for it.
type qemuGuest struct {
	vm      *vm.VM
	console *console
	ctl     *control    // the agent's channel
	mon     *vm.Monitor // QEMU's human monitor: SysRq when the agent does not answer
	logFile *os.File    // console.log
	release func()      // drops the holds on the image and the kernel
}

// startQEMU boots the run's kernel in QEMU. The agent's channel and the
// monitor are socket pairs QEMU inherits: no socket file, so nothing on
// disk to leave behind or to share with QEMU's uid.
func (r *run) startQEMU(accel string) (Guest, error) {
	ctlHost, ctlQEMU, err := vm.SocketPair()
	if err != nil {
		return nil, infra("failed to create the control channel: %w", err)
	}
	defer ctlQEMU.Close()
	monHost, monQEMU, err := vm.SocketPair()
	if err != nil {
		ctlHost.Close()
		return nil, infra("failed to create the monitor channel: %w", err)
	}
	defer monQEMU.Close()
	// What a QEMU that did not start leaves is closed.
	g := &qemuGuest{ctl: newControl(ctlHost), mon: vm.NewMonitor(monHost)}
	ok := false
	defer func() {
		if !ok {
			g.close()
		}
	}()
	// No prune removes the image, no GC the kernel, while this run boots them.
	var holds []func()
	for _, path := range []string{r.cfg.Initramfs, r.cfg.Kernel.BzImage} {
		if release, err := kernels.Hold(path); err == nil {
			holds = append(holds, release)
		}
	}
	g.release = func() {
		for _, release := range holds {
			release()
		}
	}

	machine, err := vm.PickMachine(r.cfg.Machine)
	if err != nil {
		return nil, &infraError{err}
	}
	// Unreadable, it sets nothing: the bzImage boots without tuning.
	kc, _ := kernels.ReadConfig(r.cfg.Kernel.BzImage)
	q := &vm.QEMU{Binary: r.cfg.QEMU, Accel: accel, Machine: machine, CPUs: r.s.Machine.CPUs, MemoryMB: max(r.s.Machine.MemoryMB, r.cfg.MinMemoryMB),
		Kernel: vm.KernelImage(machine, r.cfg.Kernel.BzImage, kc), Initrd: r.cfg.Initramfs, Control: ctlQEMU, Monitor: monQEMU,
		Append:      strings.Join(r.cmdline(kc), " "),
		Interactive: r.cfg.Shell}
	if r.cfg.Shell {
		q.Append += " napilab.shell=1"
	}
	for i, queues := range r.host.Queues() {
		n := r.s.Topology.NICs[i]
		q.NICs = append(q.NICs, vm.QEMUNIC{MAC: n.MAC, Queues: queues, NoEventIdx: n.EventIdx != nil && !*n.EventIdx})
	}
	r.res.QEMU = q.Cmdline()
	os.WriteFile(filepath.Join(r.cfg.OutDir, "qemu.cmdline"), []byte(r.res.QEMU+"\n"), 0o644)
	if g.logFile, err = os.Create(filepath.Join(r.cfg.OutDir, "console.log")); err != nil {
		return nil, infra("failed to create console.log: %w", err)
	}
	g.console = newConsole(g.logFile)

	r.cfg.Logf("booting %s (%s, %d cpus)", filepath.Join(filepath.Base(filepath.Dir(q.Kernel)), filepath.Base(q.Kernel)), accel, q.CPUs)
	g.vm, err = q.Start(g.console.copy)
	// QEMU has its copies: lab's own would keep the channels open after QEMU died.
	ctlQEMU.Close()
	monQEMU.Close()
	if err != nil {
		return nil, &infraError{err}
	}
	ok = true
	return g, nil
}

// cmdline is the guest kernel's command line: the lab's words, the boot
// tuning for its build's config kc, then the kernel spec's and the
// scenario's, which win.
func (r *run) cmdline(kc kernels.BuildConfig) []string {
	words := append(append([]string{}, baseCmdline...), vm.BootTuning(kc)...)
	return append(append(words, r.cfg.Cmdline...), r.s.Machine.Cmdline...)
}

func (g *qemuGuest) channel() *control           { return g.ctl }
func (g *qemuGuest) output() *console            { return g.console }
func (g *qemuGuest) ended() <-chan struct{}      { return g.vm.Done() }
func (g *qemuGuest) exitStatus() (error, string) { return g.vm.ExitStatus() }
func (g *qemuGuest) cpuUse() (vm.CPUUse, error)  { return g.vm.CPUUse() }
func (g *qemuGuest) stop(grace time.Duration)    { g.vm.Stop(grace) }

// sysrq sends the keys through QEMU's monitor.
func (g *qemuGuest) sysrq(ctx context.Context, keys ...string) error {
	if g.mon == nil {
		return errNoSysrq
	}
	return g.mon.SysRq(ctx, keys...)
}

// close kills QEMU if it still runs, then closes the channels and
// console.log and drops the hold on the image.
func (g *qemuGuest) close() {
	if g.vm != nil {
		g.vm.Stop(0)
	}
	if g.logFile != nil {
		g.logFile.Close()
	}
	if g.mon != nil {
		g.mon.Close()
	}
	if g.ctl != nil {
		g.ctl.Close()
	}
	if g.release != nil {
		g.release()
	}
}
