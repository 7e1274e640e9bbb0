package runner

import (
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/scenarios"
)

func TestXSKOptions(t *testing.T) {
	cpu := 1
	l := &scenarios.Load{SinkDev: "vs", XSK: &scenarios.XSK{Mode: scenarios.XSKRR, Queue: 2,
		AppDelay: scenarios.Duration(30 * time.Microsecond), Receive: "busy", PreferBusyPoll: true, BusyPollBudget: 64,
		Batch: 16, ZeroCopy: true, XDPMode: "generic", PollCPU: &cpu}}
	got := xskOptions(l)
	want := wire.XSK{Dev: "vs", Queue: 2, Mode: wire.XSKRR, AppDelayNs: 30000, Receive: wire.XSKBusy, PreferBusyPoll: true,
		BusyPollBudget: 64, Batch: 16, ZeroCopy: true, XDPMode: "generic", PollCPU: &cpu}
	if *got != want {
		t.Errorf("options\n got %+v\nwant %+v", *got, want)
	}
	if k := xskKinds[scenarios.XSKRR]; k != [2]string{wire.LoadXSK, wire.LoadRRClient} {
		t.Errorf("rr kinds %v", k)
	}
	if k := xskKinds[scenarios.XSKSink]; k != [2]string{wire.LoadXSK, wire.LoadUDPSend} {
		t.Errorf("sink kinds %v", k)
	}
}

func TestXSKSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   *wire.XSKStats
		want string
	}{
		{"not xsk", nil, ""},
		{"copy", &wire.XSKStats{Bound: "copy", XDPMode: "native", RxRingFull: 3},
			"AF_XDP copy mode, XDP native; rx_dropped 0, rx_ring_full 3, fill_ring_empty 0, rx_invalid 0, tx_invalid 0, tx_ring_empty 0"},
		{"zero-copy refused", &wire.XSKStats{Bound: "copy", XDPMode: "native", ZeroCopyRefused: "operation not supported"},
			"AF_XDP copy mode, XDP native (zero-copy refused: operation not supported); rx_dropped 0, rx_ring_full 0, fill_ring_empty 0, rx_invalid 0, tx_invalid 0, tx_ring_empty 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := xskSummary(tc.st); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
