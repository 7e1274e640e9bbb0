package vm

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/procgroup"
	"napilab/internal/sandbox"
	"napilab/internal/wire"
)

// QEMU describes one guest: what qemu-system-x86_64 is started with.
type QEMU struct {
	Binary   string // default qemu-system-x86_64
	Accel    string // kvm or tcg
	Machine  string // a name in machines; "" = DefaultMachine
	CPUs     int
	MemoryMB int
	Kernel   string
	Initrd   string
	Append   string
	// Control and Monitor are QEMU's ends of the agent's virtio-serial
	// channel and of the human monitor (see SocketPair); nil = none.
	Control *os.File
	Monitor *os.File
	NICs    []QEMUNIC
	// Interactive connects the serial console to this process's terminal
	// (Ctrl-C goes to the guest) and copies it raw to stdout.
	Interactive bool
	// AsCaller keeps lab's own uid instead of dropping to sandbox.UID (a
	// fake QEMU in tests that lives where nobody may not look).
	AsCaller bool
}

// QEMUNIC is a virtio-net device backed by an open multi-queue tap.
type QEMUNIC struct {
	MAC    string
	Queues []*os.File
	// NoEventIdx turns off virtio's used-event interrupt suppression
	// (event_idx=off): the device then interrupts for every buffer it
	// fills while the driver has callbacks on.
	NoEventIdx bool
}

// sandboxOpts is QEMU's seccomp filter: no obsolete system calls, no
// set*uid/set*gid, no fork/exec, no scheduler or CPU affinity changes.
const sandboxOpts = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"

// Args returns the command line; fds are numbered from 3: the NIC queues in
// order, then Control, then Monitor.
func (q *QEMU) Args() []string { return q.args(q.Kernel, q.Initrd) }

// args is Args with the kernel and initrd given as the paths QEMU opens.
func (q *QEMU) args(kernel, initrd string) []string {
	m := machineFor(q.Machine)
	args := append(append([]string{}, m.args...), []string{
		"-accel", q.Accel, "-cpu", "max",
		// Without sockets=N plain -smp N gives one CPU under this firmware.
		"-smp", fmt.Sprintf("%d,sockets=%d,cores=1,threads=1", q.CPUs, q.CPUs),
		"-m", strconv.Itoa(q.MemoryMB),
		"-nographic", "-nodefaults", "-no-reboot", "-no-user-config", "-sandbox", sandboxOpts,
		"-chardev", "stdio,id=con,signal=" + map[bool]string{true: "off", false: "on"}[q.Interactive],
		"-serial", "chardev:con",
		"-kernel", kernel, "-initrd", initrd, "-append", q.Append,
		"-device", "virtio-serial-pci,id=vser0",
		"-device", "virtserialport,bus=vser0.0,chardev=ctl,name=" + wire.PortName,
		"-device", "virtio-rng-pci",
	}...)
	fd := 3
	for i, n := range q.NICs {
		fds := make([]string, len(n.Queues))
		for j := range n.Queues {
			fds[j] = strconv.Itoa(fd)
			fd++
		}
		id := fmt.Sprintf("net%d", i)
		args = append(args,
			"-netdev", fmt.Sprintf("tap,id=%s,fds=%s,vhost=off", id, strings.Join(fds, ":")),
			"-device", fmt.Sprintf("virtio-net-pci,netdev=%s,mac=%s,mq=on,vectors=%d%s%s", id, n.MAC, 2*len(n.Queues)+2, eventIdx(n.NoEventIdx), m.nicROM()))
	}
	if q.Control != nil {
		// QEMU creates chardevs before devices, whatever their order.
		args = append(args, "-chardev", fmt.Sprintf("socket,id=ctl,fd=%d,server=off", fd))
		fd++
	}
	if q.Monitor != nil {
		args = append(args, "-chardev", fmt.Sprintf("socket,id=mon,fd=%d,server=off", fd), "-mon", "chardev=mon,mode=readline")
	}
	return args
}

// SocketPair returns the two ends of a connected stream socket: lab keeps
// host, QEMU inherits guest (close it once QEMU started, so that lab reads
// EOF when QEMU goes). Nothing is created on disk, so nothing can be left
// behind, and QEMU needs no folder of its own.
func SocketPair() (host net.Conn, guest *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	hf := os.NewFile(uintptr(fds[0]), "lab end")
	defer hf.Close() // FileConn holds its own copy
	host, err = net.FileConn(hf)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return host, os.NewFile(uintptr(fds[1]), "qemu end"), nil
}

// Cmdline is the copy-pasteable shell form (tap fds must be provided by the
// caller). Run by lab as root, QEMU runs as sandbox.UID and opens the
// kernel and initrd through fds lab opened (see start).
func (q *QEMU) Cmdline() string {
	parts := []string{q.Program()}
	for _, a := range q.Args() {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// Program is the QEMU binary to run: Binary, or qemu-system-x86_64.
func (q *QEMU) Program() string {
	if q.Binary != "" {
		return q.Binary
	}
	return "qemu-system-x86_64"
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ',' || r == '=' || r == ':' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// VM is a running QEMU.
type VM struct {
	cmd     *exec.Cmd
	stderr  *capBuffer // QEMU's stderr, bounded
	done    chan struct{}
	waitErr error
}

// Start launches QEMU in its own process group; console reads the serial
// console until QEMU closes it. Callers must call Stop. When lab runs as
// root, QEMU runs as sandbox.UID:GID (with /dev/kvm's group for kvm), which
// may not reach the cache: the kernel and initrd are opened here and passed
// as fds after the NICs' and made readable by all.
func (q *QEMU) Start(console func(io.Reader)) (*VM, error) {
	cmd := exec.Command(q.Program(), q.Args()...)
	procgroup.Set(cmd)
	for _, n := range q.NICs {
		cmd.ExtraFiles = append(cmd.ExtraFiles, n.Queues...)
	}
	for _, f := range []*os.File{q.Control, q.Monitor} {
		if f != nil {
			cmd.ExtraFiles = append(cmd.ExtraFiles, f)
		}
	}
	if cred := sandbox.Credential(q.groups()...); cred != nil && !q.AsCaller {
		var paths []string
		for _, p := range []string{q.Kernel, q.Initrd} {
			f, err := os.Open(p)
			if err != nil {
				return nil, fmt.Errorf("failed to open %s for QEMU: %w", p, err)
			}
			defer f.Close() // QEMU has its own copy once started
			// QEMU reopens it through /proc/self/fd, which checks the
			// file's mode: images are published 0600. Neither a kernel
			// nor an image (Debian packages and the agent) is secret.
			if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o004 == 0 {
				if err := f.Chmod(fi.Mode().Perm() | 0o044); err != nil {
					return nil, fmt.Errorf("failed to make %s readable for QEMU: %w", p, err)
				}
			}
			paths = append(paths, fmt.Sprintf("/proc/self/fd/%d", 3+len(cmd.ExtraFiles)))
			cmd.ExtraFiles = append(cmd.ExtraFiles, f)
		}
		cmd.Args = append([]string{cmd.Args[0]}, q.args(paths[0], paths[1])...)
		cmd.SysProcAttr.Credential = cred
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var serial io.Reader = out
	if q.Interactive {
		// The terminal sees bytes as they come (a prompt has no newline).
		// QEMU stays in our process group, the terminal's foreground one,
		// or reading the terminal would stop it (SIGTTIN); it puts the
		// terminal in raw mode, so Ctrl-C reaches the guest.
		cmd.Stdin = os.Stdin
		cmd.SysProcAttr.Setpgid = false
		serial = io.TeeReader(out, os.Stdout)
	}
	v := &VM{cmd: cmd, done: make(chan struct{}), stderr: newCapBuffer(qemuStderrHead, qemuStderrTail)}
	cmd.Stderr = v.stderr
	if err := procgroup.Start(cmd); err != nil {
		return nil, fmt.Errorf("failed to start %s (apt-get install qemu-system-x86): %w", q.Program(), err)
	}
	go func() {
		console(serial)
		v.waitErr = cmd.Wait()
		close(v.done)
	}()
	return v, nil
}

// Done is closed once QEMU exited.
func (v *VM) Done() <-chan struct{} { return v.done }

// ExitStatus says how QEMU ended, once Done is closed: its wait error (nil
// for a clean exit, as a reset or a poweroff is) and what it said on stderr.
func (v *VM) ExitStatus() (error, string) { return v.waitErr, strings.TrimSpace(v.stderr.String()) }

// CPUUse reads QEMU's threads' schedstat; ErrNoCPUUse once QEMU ended.
func (v *VM) CPUUse() (CPUUse, error) {
	select {
	case <-v.done:
		return CPUUse{}, ErrNoCPUUse
	default:
	}
	return readCPUUse(v.cmd.Process.Pid)
}

// Stop waits up to grace for QEMU to exit, then kills its process group.
func (v *VM) Stop(grace time.Duration) {
	select {
	case <-v.done:
		return
	case <-time.After(grace):
	}
	procgroup.Kill(v.cmd) // QEMU alone when interactive: it leads no group
	<-v.done
}

// groups returns the supplementary groups QEMU needs: /dev/kvm's for kvm.
func (q *QEMU) groups() []uint32 {
	var st syscall.Stat_t
	if q.Accel != "kvm" || syscall.Stat("/dev/kvm", &st) != nil {
		return nil
	}
	return []uint32{st.Gid}
}

func eventIdx(off bool) string {
	if off {
		return ",event_idx=off"
	}
	return ""
}
