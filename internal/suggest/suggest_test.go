package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"InDatagrams", "InErrors", "NoPorts", "RcvbufErrors", "rx_packets", "rx_drop", "tx_drop"}
	for in, want := range map[string]string{
		"InDatagramz": "InDatagrams", "rx_pakets": "rx_packets", "RcvBufErrors": "RcvbufErrors",
		"InDatagrams": "InDatagrams", "zzzzzzzz": "", "x_drop": "", // rx_drop and tx_drop tie
	} {
		if got := Closest(in, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance = %d", d)
	}
}
