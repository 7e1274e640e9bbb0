package agent

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"napilab/internal/wire"
)

// TestInjectHost probes a syscall of the host kernel: the verifier takes the
// program, every call counts, an armed probe with probability 1 delays each
// call, a disarmed one none, and the count caps the firings.
func TestInjectHost(t *testing.T) {
	if testing.Short() {
		t.Skip("attaches kprobes to the host kernel")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	var in injector
	err := in.setup(wire.Inject{Seed: 1, Probes: []wire.Probe{
		{Name: "slow", At: "__x64_sys_getppid", Delay: 2 * time.Millisecond, Probability: 1, Count: 5, Armed: true},
	}})
	if err != nil {
		t.Skipf("no kprobes on this host: %v", err)
	}
	defer func() {
		for _, l := range in.links {
			l.Close()
		}
	}()
	begin := time.Now()
	for range 10 {
		syscall.Getppid()
	}
	took := time.Since(begin)
	text, err := in.read()
	if err != nil {
		t.Fatal(err)
	}
	// The probe is system-wide: another host process's getppid counts too.
	var name string
	var calls, fired int
	if _, err := fmt.Sscanf(text, "%s %d %d\n", &name, &calls, &fired); err != nil || name != "slow" || calls < 10 || fired != 5 {
		t.Errorf("counters %q, want \"slow N 5\" with N >= 10 (our 10 calls, 5 firings: the count)", text)
	}
	if took < 10*time.Millisecond {
		t.Errorf("10 calls with 5 delays of 2ms took %v", took)
	}
	if err := in.arm(wire.InjectArm{Name: "slow", On: false}); err != nil {
		t.Fatal(err)
	}
	if err := in.arm(wire.InjectArm{Name: "nosuch"}); err == nil {
		t.Error("armed a probe that does not exist")
	}
}

func TestThreshold(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		want uint64
	}{{0, 0}, {1, 1 << 32}, {0.5, 1 << 31}, {2, 1 << 32}, {-1, 0}} {
		if got := threshold(tc.p); got != tc.want {
			t.Errorf("threshold(%v) = %d, want %d", tc.p, got, tc.want)
		}
	}
}
