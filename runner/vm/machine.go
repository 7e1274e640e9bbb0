package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"napilab/kernels"
)

// machine is the board and firmware a guest boots on: QEMU's -M and what
// goes with it.
type machine struct {
	args []string
	// keepNICROM keeps each virtio-net device's option ROM (iPXE), which
	// only a firmware that could boot from the network runs.
	keepNICROM bool
	// pvh boots the kernel's vmlinux through its PVH entry when the build
	// published one (CONFIG_PVH): no real-mode setup, no decompression.
	pvh bool
}

// kernelImage is the file QEMU's -kernel loads on m for the build whose
// bzImage and config (kc) are given: the vmlinux beside it when m boots PVH and the kernel
// has the entry, else the bzImage. A KASAN kernel boots its bzImage:
// stock-6.1.debug (KASAN, UBSAN) triple-faulted through the PVH entry before
// its first console byte, even with earlyprintk, which the lab would have
// taken for a kernel that does not boot.
func (m machine) kernelImage(bzImage string, kc kernels.BuildConfig) string {
	if !m.pvh {
		return bzImage
	}
	vmlinux := filepath.Join(filepath.Dir(bzImage), kernels.VmlinuxFile)
	if kc.Value("CONFIG_PVH") != "y" || kc.Value("CONFIG_KASAN") == "y" {
		return bzImage
	}
	if fi, err := os.Stat(vmlinux); err != nil || !fi.Mode().IsRegular() {
		return bzImage
	}
	return vmlinux
}

// nicROM is the virtio-net-pci property that drops the option ROM, or "".
func (m machine) nicROM() string {
	if m.keepNICROM {
		return ""
	}
	return ",romfile="
}

// DefaultMachine is what guests boot on unless NAPILAB_MACHINE says
// otherwise.
const DefaultMachine = "q35"

// machines are the boards a guest may boot on. Both are q35: the guest sees
// the same devices, clocksource (HPET), interrupt routing and keyboard
// (SysRq by sendkey), so measurements compare across them; they differ in
// firmware only. qboot jumps to the kernel; SeaBIOS first POSTs and runs the
// NICs' iPXE ROMs, which under TCG costs a few hundred milliseconds of every
// boot (BenchmarkBoot compares them).
//
// microvm (-M microvm,pcie=on,acpi=on) boots faster still but is not here:
// it has no HPET or ACPI PM timer, so the guest calibrates its TSC against
// the PIT alone, which fails on a loaded host (the boot then hangs), and it
// falls back to a jiffies clocksource (the guest finds the vCPUs' TSCs
// unsynchronized under TCG); it has no i8042 either, so SysRq by sendkey,
// the lab's hang evidence, does not reach the guest.
//
// q35 boots a kernel built with CONFIG_PVH (every lab fragment's) from its
// vmlinux: qboot jumps to the PVH entry with the initrd and command line in
// the start info, skipping the bzImage's real-mode setup and LZ4
// decompression; q35-bzimage boots the bzImage on the same board and
// firmware, q35-seabios the bzImage after a full POST (the machine before).
var machines = map[string]machine{
	"q35":         {args: []string{"-M", "q35", "-bios", "qboot.rom"}, pvh: true},
	"q35-bzimage": {args: []string{"-M", "q35", "-bios", "qboot.rom"}},
	"q35-seabios": {args: []string{"-M", "q35"}, keepNICROM: true},
}

// machineFor returns the named machine; "" is DefaultMachine. Names come
// checked by PickMachine.
func machineFor(name string) machine {
	if m, ok := machines[name]; ok {
		return m
	}
	return machines[DefaultMachine]
}

// PickMachine resolves "" to $NAPILAB_MACHINE, then to DefaultMachine.
func PickMachine(want string) (string, error) {
	if want == "" {
		want = os.Getenv("NAPILAB_MACHINE")
	}
	if want == "" {
		return DefaultMachine, nil
	}
	if _, ok := machines[want]; !ok {
		return "", fmt.Errorf("unknown machine %q: want one of %s", want, strings.Join(MachineNames(), ", "))
	}
	return want, nil
}

func MachineNames() []string {
	var names []string
	for n := range machines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KernelImage is the file machine boots for a kernel built as bzImage with
// config kc: the vmlinux beside it where the machine boots through PVH and
// the kernel can, else bzImage.
func KernelImage(machine, bzImage string, kc kernels.BuildConfig) string {
	return machineFor(machine).kernelImage(bzImage, kc)
}
