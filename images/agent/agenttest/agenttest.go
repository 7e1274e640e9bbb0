// Package agenttest runs tests that serve the agent in the test process
// (agent.Serve with Options.Netns) in a mount namespace of their own, so
// that the sysfs the agent mounts goes with the process, even a killed one.
//
//	func TestMain(m *testing.M) { agenttest.Main(m) }
package agenttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// reexecEnv marks the re-executed test binary.
const reexecEnv = "NAPILAB_TEST_MOUNT_NS"

// Main runs m in a private mount namespace: as root it runs the test binary
// again in one (mounts private, killed with this process) and exits with
// its status; otherwise, or once there, it runs m. In the namespace tracefs
// is mounted where a host that has not mounted it lacks it, so the tests of
// the agent's tracepoint programs run there too.
func Main(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	if os.Getenv(reexecEnv) != "" {
		mountTracefs()
		os.Exit(m.Run())
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = os.Args // tests that run the binary again find it as they would
	cmd.Env = append(os.Environ(), reexecEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Go makes the new namespace's mounts private before the exec.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintf(os.Stderr, "agenttest: failed to run the tests in a mount namespace: %v\n", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// tracefsDir is where the agent's programs find the tracepoints' formats.
const tracefsDir = "/sys/kernel/tracing"

// mountTracefs mounts tracefs at tracefsDir unless it is there; a failure
// leaves the tests that need it to skip, naming what they lack.
func mountTracefs() {
	if _, err := os.Stat(tracefsDir + "/events"); err == nil {
		return
	}
	if err := syscall.Mount("tracefs", tracefsDir, "tracefs", 0, ""); err != nil {
		fmt.Fprintf(os.Stderr, "agenttest: tracefs not mounted at %s: %v\n", tracefsDir, err)
	}
}
