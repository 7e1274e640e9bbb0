package vm

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/internal/sandbox"
)

func TestQEMUArgsSandbox(t *testing.T) {
	q := &QEMU{Accel: "tcg", CPUs: 1, MemoryMB: 256, Kernel: "/k", Initrd: "/i"}
	args := strings.Join(q.Args(), " ")
	if want := "-sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"; !strings.Contains(args, want) {
		t.Errorf("QEMU args lack %q:\n%s", want, args)
	}
}

// Started by lab as root, QEMU (a stand-in script) runs as the sandbox's
// uid with no other group and still reads the kernel and initrd, which
// live below a folder that uid cannot search (like root's cache).
func TestQEMUStartsUnprivileged(t *testing.T) {
	if !sandbox.Active() {
		t.Skip("QEMU drops privileges only when lab runs as root")
	}
	private := t.TempDir() // 0700
	for name, data := range map[string]string{"bzImage": "KERNEL", "initramfs": "INITRD"} {
		if err := os.WriteFile(filepath.Join(private, name), []byte(data), 0o600); err != nil { // as images are published
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	for _, d := range []string{filepath.Dir(bin), bin} {
		os.Chmod(d, 0o755)
	}
	fake := filepath.Join(bin, "qemu")
	script := `#!/bin/sh
while [ $# -gt 0 ]; do
	case $1 in -kernel) k=$2;; -initrd) i=$2;; esac
	shift
done
echo "uid $(id -u) groups $(id -G)"
echo "kernel $(cat "$k") initrd $(cat "$i")"
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("id"); err != nil {
		t.Skip("no id")
	}
	q := &QEMU{Binary: fake, Accel: "tcg", CPUs: 1, MemoryMB: 64, Kernel: filepath.Join(private, "bzImage"),
		Initrd: filepath.Join(private, "initramfs")}
	var console bytes.Buffer
	v, err := q.Start(func(r io.Reader) { io.Copy(&console, r) })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-v.done:
	case <-time.After(10 * time.Second):
		v.Stop(0)
		t.Fatal("fake QEMU did not exit")
	}
	want := "uid 65534 groups 65534\nkernel KERNEL initrd INITRD\n"
	if got := console.String(); got != want {
		t.Errorf("fake QEMU printed %q (stderr %q), want %q", got, v.stderr.String(), want)
	}
	if !v.cmd.SysProcAttr.Setpgid || v.cmd.SysProcAttr.Pdeathsig == 0 {
		t.Error("QEMU lost its process group or parent-death signal")
	}
}

// TestQEMUStderrBounded: QEMU's stderr is kept up to its head and tail.
func TestQEMUStderrBounded(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "qemu")
	script := "#!/bin/sh\necho first >&2\nyes 'qemu: warning: flood' | head -c 8388608 >&2\necho last >&2\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	q := &QEMU{Binary: fake, Accel: "tcg", CPUs: 1, MemoryMB: 64, Kernel: "bzImage", Initrd: "initrd", AsCaller: true}
	v, err := q.Start(func(r io.Reader) { io.Copy(io.Discard, r) })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-v.Done():
	case <-time.After(time.Minute):
		v.Stop(0)
		t.Fatal("fake QEMU did not exit")
	}
	_, said := v.ExitStatus()
	if len(said) > 1<<20+64<<10+256 || !strings.HasPrefix(said, "first") || !strings.HasSuffix(said, "last") {
		t.Errorf("stderr kept: %d bytes, from %.20q to %.20q; want at most 1 MiB + 64 KiB, its first and last lines", len(said), said, said[max(len(said)-20, 0):])
	}
}
