package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// QEMU describes one guest: what qemu-system-x86_64 is started with.
type QEMU struct {
	Binary   string // default qemu-system-x86_64
	Accel    string // kvm or tcg
	CPUs     int
	MemoryMB int
	Kernel   string
	Initrd   string
	Append   string
	Control  string // unix socket path of the agent's virtio-serial port
	Monitor  string // unix socket path of the human monitor (SysRq when the agent is gone), "" = none
	NICs     []QEMUNIC
	// Interactive connects the serial console to this process's terminal
	// (Ctrl-C goes to the guest) and copies it raw to stdout.
	Interactive bool
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

// Args returns the command line; fds of NIC queues are numbered from 3 in order.
func (q *QEMU) Args() []string {
	args := []string{
		"-M", "q35", "-accel", q.Accel, "-cpu", "max",
		// Without sockets=N plain -smp N gives one CPU under this firmware.
		"-smp", fmt.Sprintf("%d,sockets=%d,cores=1,threads=1", q.CPUs, q.CPUs),
		"-m", strconv.Itoa(q.MemoryMB),
		"-nographic", "-nodefaults", "-no-reboot", "-no-user-config",
		"-chardev", "stdio,id=con,signal=" + map[bool]string{true: "off", false: "on"}[q.Interactive],
		"-serial", "chardev:con",
		"-kernel", q.Kernel, "-initrd", q.Initrd, "-append", q.Append,
		"-device", "virtio-serial-pci,id=vser0",
		"-chardev", "socket,id=ctl,path=" + q.Control + ",server=on,wait=off",
		"-device", "virtserialport,bus=vser0.0,chardev=ctl,name=napilab.ctl",
		"-device", "virtio-rng-pci",
	}
	if q.Monitor != "" {
		args = append(args, "-monitor", "unix:"+q.Monitor+",server=on,wait=off")
	}
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
			"-device", fmt.Sprintf("virtio-net-pci,netdev=%s,mac=%s,mq=on,vectors=%d%s", id, n.MAC, 2*len(n.Queues)+2, eventIdx(n.NoEventIdx)))
	}
	return args
}

// Cmdline is the copy-pasteable shell form (tap fds must be provided by the caller).
func (q *QEMU) Cmdline() string {
	parts := []string{q.binary()}
	for _, a := range q.Args() {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func (q *QEMU) binary() string {
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

// vm is a running QEMU.
type vm struct {
	cmd     *exec.Cmd
	console *console
	stderr  bytes.Buffer
	done    chan struct{}
	waitErr error
}

// start launches QEMU in its own process group; the console goes to w and
// to the in-memory log. Callers must call stop.
func (q *QEMU) start(w io.Writer) (*vm, error) {
	cmd := exec.Command(q.binary(), q.Args()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	for _, n := range q.NICs {
		cmd.ExtraFiles = append(cmd.ExtraFiles, n.Queues...)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var console io.Reader = out
	if q.Interactive {
		// The terminal sees bytes as they come (a prompt has no newline).
		// QEMU stays in our process group, the terminal's foreground one,
		// or reading the terminal would stop it (SIGTTIN); it puts the
		// terminal in raw mode, so Ctrl-C reaches the guest.
		cmd.Stdin = os.Stdin
		cmd.SysProcAttr.Setpgid = false
		console = io.TeeReader(out, os.Stdout)
	}
	v := &vm{cmd: cmd, console: newConsole(w), done: make(chan struct{})}
	cmd.Stderr = &v.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s (apt-get install qemu-system-x86): %w", q.binary(), err)
	}
	go func() {
		v.console.copy(console)
		v.waitErr = cmd.Wait()
		close(v.done)
	}()
	return v, nil
}

// exited reports whether QEMU has exited.
func (v *vm) exited() bool {
	select {
	case <-v.done:
		return true
	default:
		return false
	}
}

// stop waits up to grace for QEMU to exit, then kills its process group.
func (v *vm) stop(grace time.Duration) {
	select {
	case <-v.done:
		return
	case <-time.After(grace):
	}
	if v.cmd.SysProcAttr.Setpgid {
		syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL)
	} else {
		v.cmd.Process.Kill()
	}
	<-v.done
}

func eventIdx(off bool) string {
	if off {
		return ",event_idx=off"
	}
	return ""
}
