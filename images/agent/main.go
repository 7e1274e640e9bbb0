// Package agent is napilab's guest agent: PID 1 of the lab initramfs
// (cmd/agent). It mounts the pseudo filesystems, opens the virtio-serial
// control port and serves wire requests until the host asks it to power off.
//
//	agent.Init() // as the guest's /init; never returns
//	err := agent.Serve(port, agent.Options{Netns: true, RunDir: dir}) // in a test process
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stdout, "napilab-agent: "+format+"\n", args...)
}

// Init runs the agent as the guest's init: it serves the virtio-serial
// control port and powers the machine off when the host asks it to or the
// port fails. It never returns.
func Init() {
	var setup sync.WaitGroup
	if os.Getpid() == 1 {
		mainAt = uptime()
		go kids.reapLoop() // as init: orphans are ours to reap
		if err := mount(portMounts); err != nil {
			logf("mount: %v", err)
		}
		// The rest of what an init sets up goes beside finding the port
		// (the other vCPU takes it: ~50 ms of a boot under TCG); the agent
		// says it is ready once all of it is done.
		setup.Add(3)
		go func() {
			defer setup.Done()
			execAt = execTime() // ~20 ms of reading the kernel's log under TCG
		}()
		go func() {
			defer setup.Done()
			if err := mount(laterMounts); err != nil {
				logf("mount: %v", err)
			}
			devLinks()
			unix.Sethostname([]byte("napilab"))
			// The lab boots with a quiet console (runner.bootTuning).
			if err := restoreConsoleLevel(printkFile); err != nil {
				logf("console level: %v", err)
			}
		}()
		go func() {
			defer setup.Done()
			// Loopback up, as any init would: selftests bind 127.0.0.1 and ::1.
			if lo, err := netlink.LinkByName("lo"); err == nil {
				if err := netlink.LinkSetUp(lo); err != nil {
					logf("lo up: %v", err)
				}
			}
		}()
	}
	port, err := openPort()
	setup.Wait()
	if err != nil {
		logf("no control port: %v", err)
		halt()
	}
	err = Serve(port, Options{Ready: func() {
		if shellWanted() {
			go serveShell()
		}
	}, Poweroff: halt})
	logf("control port: %v", err)
	halt()
}

// Options says how Serve runs; the guest's init sets only the hooks.
type Options struct {
	// Ready runs once the ready event is sent.
	Ready func()
	// Poweroff runs once a poweroff request is answered; nil = keep serving.
	Poweroff func()
	// Netns serves every request inside a private network namespace of
	// the agent's own, standing for the guest's root one (the agent then
	// runs in a process that is not the guest, such as a test); Serve
	// removes the namespaces and their sysfs mounts when it returns.
	Netns bool
	// RunDir holds each namespace's sysfs mount; "" = /run/napilab.
	RunDir string
}

// Serve answers the host's requests on port, each in its own goroutine,
// until reading port fails, and returns that error. It first sends the
// ready event.
func Serve(port io.ReadWriter, opts Options) error {
	a := newAgent()
	if opts.RunDir != "" {
		a.ns.dir = opts.RunDir + "/ns"
	}
	if opts.Netns {
		if err := a.ns.create(""); err != nil {
			return fmt.Errorf("failed to create the agent's network namespace: %w", err)
		}
		defer a.ns.close()
		defer a.stopAll()
	}
	conn := wire.NewConn(port)
	hello := a.hello()
	logf("ready: kernel %s, %d cpus, uptime %.2fs", hello.Kernel, hello.CPUs, hello.Uptime)
	if err := conn.Send(&wire.Message{Event: wire.EventReady, Data: wire.Encode(hello)}); err != nil {
		logf("send ready: %v", err)
	}
	a.polls.syms.load() // in the background: napi_polls names NAPIs by poll function
	if opts.Ready != nil {
		opts.Ready()
	}
	for {
		m, err := conn.Recv()
		if err != nil {
			return err
		}
		go a.serve(conn, m, opts.Poweroff)
	}
}

// serve runs one request, in the root namespace, and answers it.
func (a *agent) serve(conn *wire.Conn, m *wire.Message, poweroff func()) {
	var data any
	var err error
	if nerr := a.ns.in("", func() error { data, err = a.dispatch(m); return nil }); nerr != nil {
		err = nerr
	}
	resp := &wire.Message{ID: m.ID, Data: wire.Encode(data)}
	if err != nil {
		resp.Error = err.Error()
		resp.Kind, resp.Errno = errorKind(err)
	}
	if err := conn.Send(resp); err != nil {
		logf("send %s reply: %v", m.Op, err)
	}
	if m.Op == wire.OpPoweroff && err == nil && poweroff != nil {
		poweroff()
	}
}

// timeoutError marks an agent error that is a timeout of its own.
type timeoutError struct{ error }

func (e timeoutError) Unwrap() error { return e.error }

// errorKind classifies an answer's error for the host (wire.Kind*): an
// errno anywhere in the chain (syscalls, os.PathError, netlink's wrapped
// errnos) is the kernel refusing, a timeoutError the agent's own deadline,
// anything else the agent's fault.
func errorKind(err error) (string, int) {
	var te timeoutError
	if errors.As(err, &te) {
		return wire.KindTimeout, 0
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != 0 {
		return wire.KindErrno, int(errno)
	}
	return wire.KindAgent, 0
}

func decode[T any](m *wire.Message) (T, error) {
	var v T
	if len(m.Args) == 0 {
		return v, nil
	}
	err := json.Unmarshal(m.Args, &v)
	if err != nil {
		err = fmt.Errorf("bad %s args: %w", m.Op, err)
	}
	return v, err
}

// mountPoint is a file system the guest's init mounts.
type mountPoint struct {
	src, dst, typ string
	optional      bool // for a Debian userspace (kselftests); quiet when the kernel lacks it
}

// portMounts are what finding the control port needs; laterMounts go
// beside that search.
var (
	portMounts = []mountPoint{
		{"proc", "/proc", "proc", false},
		{"sysfs", "/sys", "sysfs", false},
		{"devtmpfs", "/dev", "devtmpfs", false},
	}
	laterMounts = []mountPoint{
		{"tmpfs", "/run", "tmpfs", false},
		{"tmpfs", "/tmp", "tmpfs", false},
		{"debugfs", "/sys/kernel/debug", "debugfs", false},
		{"tracefs", "/sys/kernel/tracing", "tracefs", true},
		{"devpts", "/dev/pts", "devpts", true},
		{"tmpfs", "/dev/shm", "tmpfs", true},
		{"bpf", "/sys/fs/bpf", "bpf", true},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", true},
	}
)

// mount mounts ms in order; a failed mkdir of one that is not optional
// stops it.
func mount(ms []mountPoint) error {
	for _, m := range ms {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			if m.optional {
				continue
			}
			return err
		}
		if err := unix.Mount(m.src, m.dst, m.typ, 0, ""); err != nil && err != unix.EBUSY && !m.optional {
			logf("mount %s: %v", m.dst, err)
		}
	}
	return nil
}

// devLinks adds what udev would to devtmpfs: shells open /dev/stdout and
// /dev/fd/N (the kselftest runner writes a test's output to /dev/stdout).
func devLinks() {
	for name, target := range map[string]string{"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0",
		"/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, name); err != nil && !os.IsExist(err) {
			logf("symlink %s: %v", name, err)
		}
	}
}

// openPort finds the virtio-serial port named wire.PortName.
func openPort() (*os.File, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err == nil && strings.TrimSpace(string(b)) == wire.PortName {
				dev := "/dev/" + filepath.Base(filepath.Dir(n))
				return os.OpenFile(dev, os.O_RDWR, 0)
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no virtio port named %s", wire.PortName)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// halt powers the machine off; PID 1 never returns.
func halt() {
	unix.Sync()
	if os.Getpid() == 1 {
		unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	}
	for {
		time.Sleep(time.Hour)
	}
}
