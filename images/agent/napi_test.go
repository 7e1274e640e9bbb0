package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"napilab/internal/wire"
)

// napiLine returns the napi source line of dev's NAPI name, "" if none.
func napiLine(t *testing.T, a *agent, dev, name string) string {
	t.Helper()
	text, err := a.napiStats("t")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, dev+" "+name+" ") {
			return l
		}
	}
	return ""
}

// TestNAPIVeth sets a veth's NAPI through napi-set in a private netns and
// reads it back with the napi source, on the host's own kernel: veth has a
// NAPI per RX queue while it is up with GRO on.
func TestNAPIVeth(t *testing.T) {
	a := testAgent(t)
	if err := a.ns.feature("t", "va", "rx-gro", true); err != nil {
		t.Fatal(err)
	}
	if _, err := a.napiStats("t"); errors.As(err, new(lackError)) {
		t.Skipf("host kernel: %v", err)
	}
	if l := napiLine(t, a, "va", "rx-0"); !strings.Contains(l, " id ") {
		t.Fatalf("no NAPI of va with GRO on: %q", l)
	}
	q := 0
	ids, err := a.napi(wire.NAPI{Dev: "va", Netns: "t", Queue: &q, Threaded: wire.NAPIThreadedEnabled,
		DeferHardIRQs: ptr[uint32](3), GROFlushTimeout: ptr[uint64](200_000)})
	if errors.As(err, new(lackError)) {
		t.Skipf("host kernel: %v", err)
	}
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("host kernel without napi-set threaded: %v", err)
	}
	if err != nil || len(ids) != 1 {
		t.Fatalf("napi-set: %v %v", ids, err)
	}
	l := napiLine(t, a, "va", "rx-0")
	for _, want := range []string{" threaded 1 ", " pid ", " defer_hard_irqs 3 ", " gro_flush_timeout 200000"} {
		if !strings.Contains(l, want) {
			t.Errorf("after napi-set: %q, want %q in it", l, want)
		}
	}

	// busy-poll: set on 6.19 on, an errno (ERANGE) the runner sees before.
	_, err = a.napi(wire.NAPI{Dev: "va", Netns: "t", Threaded: wire.NAPIThreadedBusyPoll})
	t.Logf("after enabled: %s; busy-poll: %v", l, err)
	if err != nil {
		if kind, errno := errorKind(err); kind != wire.KindErrno || errno != int(unix.ERANGE) {
			t.Errorf("busy-poll refused with %v (%s %d), want the kernel's ERANGE", err, kind, errno)
		}
	} else if l := napiLine(t, a, "va", "rx-0"); !strings.Contains(l, " threaded 2 ") {
		t.Errorf("after busy-poll: %q", l)
	}

	if _, err := a.napi(wire.NAPI{Dev: "va", Netns: "t", Threaded: wire.NAPIThreadedDisabled}); err != nil {
		t.Fatal(err)
	}
	if l := napiLine(t, a, "va", "rx-0"); !strings.Contains(l, " threaded 0 ") || strings.Contains(l, " pid ") {
		t.Errorf("after disabled: %q, want threaded 0 and no kthread", l)
	}
}

func TestNAPIErrors(t *testing.T) {
	a := testAgent(t)
	for _, tc := range []struct {
		name string
		set  wire.NAPI
		want string
		kind string
	}{
		{"no setting", wire.NAPI{Dev: "va", Netns: "t"}, "no setting to change", wire.KindAgent},
		{"bad mode", wire.NAPI{Dev: "va", Netns: "t", Threaded: "on"}, "bad threaded mode", wire.KindAgent},
		// GRO is off: veth has no NAPI.
		{"no NAPI", wire.NAPI{Dev: "va", Netns: "t", Threaded: "enabled"}, "va has no NAPI", wire.KindAgent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.napi(tc.set)
			if errors.As(err, new(lackError)) {
				t.Skipf("host kernel: %v", err)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if kind, _ := errorKind(err); kind != tc.kind {
				t.Errorf("kind %s, want %s", kind, tc.kind)
			}
		})
	}
}

// TestLackErrorKind: a kernel without the netdev family or napi-set is the
// wrong kernel for the step (ERROR), not a refusal tolerate: could name.
func TestLackErrorKind(t *testing.T) {
	err := fmt.Errorf("failed to read the NAPIs: %w", lackError{"netdev napi-set (6.12 has none)"})
	if kind, errno := errorKind(err); kind != wire.KindAgent || errno != 0 {
		t.Errorf("kind %s errno %d, want %s", kind, errno, wire.KindAgent)
	}
	if want := "the kernel lacks netdev napi-set (6.12 has none)"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("%q, want it to end in %q", err, want)
	}
}
