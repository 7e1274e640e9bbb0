package results

import (
	"os"
	"testing"
)

func TestParseSoftirqsReal(t *testing.T) {
	// Captured from the lab's stock-6.1 guest (2 CPUs) after a threaded-toggle run.
	b, err := os.ReadFile("testdata/proc/softirqs-6.1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSoftirqs(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 10 || len(s["NET_RX"]) != 2 {
		t.Fatalf("parsed %d rows, NET_RX has %d cpus; want 10 rows, 2 cpus", len(s), len(s["NET_RX"]))
	}
	sum, _ := s.Value("NET_RX", -1)
	c0, _ := s.Value("NET_RX", 0)
	c1, _ := s.Value("NET_RX", 1)
	if sum != c0+c1 || sum == 0 {
		t.Errorf("NET_RX sum %d, cpus %d + %d", sum, c0, c1)
	}
	if _, ok := s.Value("NET_RX", 2); ok {
		t.Error("cpu 2 of a 2-cpu guest reported as present")
	}
}

func TestParseSoftirqsRejects(t *testing.T) {
	for _, bad := range []string{"", "garbage\n", "  CPU0 CPU1\nNET_RX: 1\n", "  CPU0\nNET_RX: x\n"} {
		if _, err := ParseSoftirqs(bad); err == nil {
			t.Errorf("ParseSoftirqs(%q) accepted", bad)
		}
	}
}
