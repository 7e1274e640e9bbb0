package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/kernels"
)

func TestPickMachine(t *testing.T) {
	for _, tc := range []struct {
		name, want, env, got, err string
	}{
		{name: "default", got: DefaultMachine},
		{name: "from the environment", env: "q35-seabios", got: "q35-seabios"},
		{name: "asked beats the environment", want: "q35", env: "q35-seabios", got: "q35"},
		{name: "unknown", want: "microvm", err: `unknown machine "microvm": want one of q35, q35-bzimage, q35-seabios`},
		{name: "unknown in the environment", env: "pc", err: `unknown machine "pc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NAPILAB_MACHINE", tc.env)
			got, err := PickMachine(tc.want)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("PickMachine(%q) = %q, %v; want error %q", tc.want, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.got {
				t.Errorf("PickMachine(%q) = %q, %v; want %q", tc.want, got, err, tc.got)
			}
		})
	}
}

// The machine sets -M and the firmware, and whether the NICs keep their
// iPXE ROM: only SeaBIOS runs it.
func TestQEMUArgsMachine(t *testing.T) {
	for _, tc := range []struct {
		name, machine string
		want, not     []string
	}{
		{name: "default is q35 with qboot", want: []string{"-M q35 -bios qboot.rom", "vectors=6,romfile= "}},
		{name: "q35", machine: "q35", want: []string{"-M q35 -bios qboot.rom", "vectors=6,romfile= "}},
		{name: "q35 with SeaBIOS", machine: "q35-seabios", want: []string{"-M q35 ", "vectors=6 "},
			not: []string{"-bios", "romfile"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &QEMU{Accel: "tcg", Machine: tc.machine, CPUs: 2, MemoryMB: 256, Kernel: "/k", Initrd: "/i",
				NICs: []QEMUNIC{{MAC: "52:54:00:12:34:56", Queues: make([]*os.File, 2)}}}
			args := strings.Join(q.Args(), " ") + " "
			for _, w := range tc.want {
				if !strings.Contains(args, w) {
					t.Errorf("args lack %q:\n%s", w, args)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(args, n) {
					t.Errorf("args have %q:\n%s", n, args)
				}
			}
		})
	}
}

// q35 boots the published vmlinux only when the build has the PVH entry and
// the file is there; every other case, and the other machines, the bzImage.
func TestKernelImage(t *testing.T) {
	for _, tc := range []struct {
		name, machine, config string
		vmlinux, want         bool
	}{
		{name: "PVH kernel with vmlinux", machine: "q35", config: "CONFIG_PVH=y\n", vmlinux: true, want: true},
		{name: "no PVH entry", machine: "q35", config: "# CONFIG_PVH is not set\n", vmlinux: true},
		{name: "KASAN kernel", machine: "q35", config: "CONFIG_PVH=y\nCONFIG_KASAN=y\n", vmlinux: true},
		{name: "no vmlinux published", machine: "q35", config: "CONFIG_PVH=y\n"},
		{name: "no config", machine: "q35", vmlinux: true},
		{name: "bzImage machine", machine: "q35-bzimage", config: "CONFIG_PVH=y\n", vmlinux: true},
		{name: "SeaBIOS", machine: "q35-seabios", config: "CONFIG_PVH=y\n", vmlinux: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bz := filepath.Join(dir, "bzImage")
			os.WriteFile(bz, []byte("bz"), 0o644)
			if tc.config != "" {
				os.WriteFile(filepath.Join(dir, "config"), []byte(tc.config), 0o644)
			}
			if tc.vmlinux {
				os.WriteFile(filepath.Join(dir, "vmlinux"), []byte("elf"), 0o644)
			}
			want := bz
			if tc.want {
				want = filepath.Join(dir, "vmlinux")
			}
			kc, _ := kernels.ReadConfig(bz)
			if got := machineFor(tc.machine).kernelImage(bz, kc); got != want {
				t.Errorf("kernelImage = %s, want %s", got, want)
			}
		})
	}
}
