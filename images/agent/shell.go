package agent

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// shellWanted says whether the kernel command line asks for napilab.shell=1.
func shellWanted() bool {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return false
	}
	for _, w := range strings.Fields(string(b)) {
		if w == "napilab.shell=1" {
			return true
		}
	}
	return false
}

// serveShell runs the image's shell on the serial console as its
// controlling terminal, again each time it exits, while the agent keeps
// serving the control channel.
func serveShell() {
	for {
		tty, err := os.OpenFile("/dev/ttyS0", os.O_RDWR, 0)
		if err != nil {
			logf("shell: %v", err)
			return
		}
		// -comp=false: gosh's plain line editor; the rich one needs a terminal size a serial line lacks.
		cmd := exec.Command("/bin/sh", "-comp=false")
		cmd.Env = []string{"PATH=/bin", "HOME=/tmp", "TERM=linux", "PS1=napilab# "}
		if _, err := os.Stat("/bin/bash"); err == nil { // the Debian image
			cmd = exec.Command("/bin/bash", "-i")
			cmd.Env = []string{"PATH=" + defaultPath, "HOME=/root", "TERM=linux", "PS1=napilab# "}
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.Dir = "/tmp"
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		logf("shell on ttyS0 (agent still serving); poweroff with: echo o > /proc/sysrq-trigger")
		err = kids.start(cmd, cmd.Start)
		if err == nil {
			err = cmd.Wait()
			kids.done(cmd)
		}
		if err != nil {
			logf("shell: %v", err)
		}
		tty.Close()
		time.Sleep(200 * time.Millisecond)
	}
}
