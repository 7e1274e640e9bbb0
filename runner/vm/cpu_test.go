package vm

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// A thread that exits between two reads does not take its earlier time off
// the difference, and no difference is negative.
func TestCPUUseSince(t *testing.T) {
	th := func(ran, waited int) CPUUse {
		return CPUUse{Ran: time.Duration(ran) * time.Second, Waited: time.Duration(waited) * time.Second}
	}
	from := CPUUse{Ran: 13 * time.Second, Waited: 7 * time.Second,
		threads: map[string]CPUUse{"1": th(3, 2), "2": th(10, 5)}}
	// thread 2 (an idle worker) exited; thread 1 ran 1 s and waited 4 s more; thread 3 is new
	now := CPUUse{Ran: 5 * time.Second, Waited: 7 * time.Second,
		threads: map[string]CPUUse{"1": th(4, 6), "3": th(1, 1)}}
	ran, waited := now.Since(from)
	if ran != 2*time.Second || waited != 5*time.Second {
		t.Errorf("since = ran %v waited %v, want 2s and 5s", ran, waited)
	}
	if ran, waited := th(1, 1).Since(th(3, 3)); ran != 0 || waited != 0 {
		t.Errorf("totals going back gave %v %v, want 0", ran, waited)
	}
}

// TestReadCPUUse reads a real process's threads: this test process, which
// has run, and a sleeping child, which asks for no CPU.
func TestReadCPUUse(t *testing.T) {
	self, err := readCPUUse(os.Getpid())
	if err != nil {
		t.Skipf("no schedstat on this host: %v", err)
	}
	if self.Ran <= 0 {
		t.Errorf("this process ran %v, want more than nothing", self.Ran)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if _, err := readCPUUse(cmd.Process.Pid); err != nil {
		t.Error(err)
	}
	if _, err := readCPUUse(1 << 30); err == nil {
		t.Error("a process that does not exist has a CPU use")
	}
	for _, bad := range []string{"", "12", "x 1 1", "1 y 1"} {
		if _, _, err := parseSchedstat(bad); err == nil {
			t.Errorf("schedstat %q parsed", bad)
		}
	}
}

// TestCapBuffer keeps the head and the tail of a flood, and all of a
// short write.
func TestCapBuffer(t *testing.T) {
	b := newCapBuffer(4, 8)
	b.Write([]byte("ab"))
	if got := b.String(); got != "ab" {
		t.Errorf("%q, want ab", got)
	}
	for _, s := range []string{"cdef", "0123456789", "XYZ"} {
		b.Write([]byte(s))
	}
	if got, want := b.String(), "abcd\n--- napilab: 7 bytes of QEMU's stderr not kept ---\n56789XYZ"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
