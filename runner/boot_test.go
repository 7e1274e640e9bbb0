package runner

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/runner/vm"
)

// TestBootVerdicts boots a shell script posing as QEMU and checks whose
// fault a boot without an agent is: QEMU's (ERROR), the initramfs' (ERROR),
// the kernel's (FAIL), or nobody can tell (ERROR).
func TestBootVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		verdict results.Verdict
		reason  string
	}{
		{"qemu fails to start", "echo 'qemu-system-x86_64: could not load kernel' >&2; exit 1", results.Error, "could not load kernel"},
		{"qemu killed", "kill -9 $$", results.Error, "qemu failed: signal: killed"},
		{"a triple fault before the console", "exit 0", results.Fail, "the kernel did not boot: QEMU ran fine"},
		{"a kernel that starts and dies", "echo 'Linux version 6.1.0'; echo 'Kernel panic - not syncing: Fatal exception'; exit 0",
			results.Fail, "the guest stopped before the agent was ready"},
		{"an initramfs without /init", "echo 'Linux version 6.1.0'; echo 'Kernel panic - not syncing: No working init found.  Try passing init= option to kernel.'; exit 0",
			results.Error, "has no working /init"},
		{"no agent, no splat", "echo 'Linux version 6.1.0'; exec sleep 30", results.Error, "no agent after 300ms: the kernel started, without a splat"},
		{"no agent after a splat", "echo 'Linux version 6.1.0'; echo 'Kernel panic - not syncing: Fatal exception'; exec sleep 30",
			results.Fail, "the kernel did not boot: kernel panic: Fatal exception, and no agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "qemu")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			host, guest, err := vm.SocketPair()
			if err != nil {
				t.Fatal(err)
			}
			q := &vm.QEMU{Binary: bin, Accel: "tcg", CPUs: 1, MemoryMB: 128, Kernel: "bzImage", Initrd: "initrd", Control: guest, AsCaller: true}
			g := &qemuGuest{console: newConsole(io.Discard)}
			v, err := q.Start(g.console.copy)
			guest.Close()
			if err != nil {
				t.Fatal(err)
			}
			g.vm = v
			defer v.Stop(0)
			r := &run{cfg: Config{OutDir: dir, Initramfs: "initrd", bootLimit: 300 * time.Millisecond},
				s: windowScenario(t, ""), res: &results.Result{}, guest: g, ctl: newControl(host)}
			err = r.boot(context.Background(), "tcg")
			if r.ctl != nil {
				r.ctl.Close()
			}
			r.finish(err)
			if r.res.Verdict != tc.verdict || len(r.res.Reasons) == 0 || !strings.Contains(r.res.Reasons[0], tc.reason) {
				t.Errorf("verdict %s %q, want %s with %q", r.res.Verdict, r.res.Reasons, tc.verdict, tc.reason)
			}
		})
	}
}

// TestBootPhases: a boot splits by the agent's dates; an agent that did not
// date its start (not /init, or an older one) or dates out of order gives none.
func TestBootPhases(t *testing.T) {
	got := bootPhases(1.5, wire.Hello{Exec: 0.6, Main: 0.75, Uptime: 1.1})
	want := results.BootPhases{Before: 0.4, Kernel: 0.6, Agent: 0.5, Runtime: 0.15}
	if got == nil || math.Abs(got.Before-want.Before) > 1e-9 || got.Kernel != want.Kernel ||
		math.Abs(got.Agent-want.Agent) > 1e-9 || math.Abs(got.Runtime-want.Runtime) > 1e-9 {
		t.Errorf("bootPhases = %+v, want %+v", got, want)
	}
	for _, h := range []wire.Hello{{Uptime: 1.1}, {Exec: 0.6, Main: 0.5, Uptime: 1.1}, {Exec: 0.6, Main: 1.2, Uptime: 1.1}} {
		if p := bootPhases(1.5, h); p != nil {
			t.Errorf("bootPhases(%+v) = %+v, want none", h, p)
		}
	}
}
