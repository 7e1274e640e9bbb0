package metrics

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// fixtures are the /proc captures (and composed files, see testdata/proc/README)
// with the source the agent reads them as.
var fixtures = []struct{ source, file string }{
	{"softirqs", "softirqs-6.1"},
	{"softnet_stat", "softnet_stat-6.1"},
	{"softnet_stat", "softnet_stat-6.12-composed"},
	{"softnet_stat", "softnet_stat-6.12"},
	{"softirqs", "softirqs-6.12"},
	{"interrupts", "interrupts-6.12"},
	{"snmp", "snmp-6.12"},
	{"interrupts", "interrupts-6.1"},
	{"snmp", "snmp-6.1"},
	{"tasks:ksoftirqd/", "tasks-ksoftirqd"},
	{"tasks:napi/", "tasks-napi"},
	{"qdisc:t", "qdisc-host"},
}

func readFixture(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/proc", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseSourceFixtures(t *testing.T) {
	for _, tc := range []struct {
		file    string
		nfields int
		want    map[string][]float64 // a subset of the fields, exactly
		absent  []string
	}{
		{"softirqs-6.1", 10, map[string][]float64{"NET_RX": {109292, 133108}, "TIMER": {856, 1082},
			"TASKLET": {1, 0}, "RCU": {5719, 4941}, "HI": {0, 0}}, []string{"CPU0"}},
		{"softnet_stat-6.1", 7, map[string][]float64{"processed": {0xc9a, 0x2824}, "dropped": {0, 0},
			"time_squeeze": {0x13, 0x1d}, "received_rps": {0, 571}, "flow_limit_count": {0, 0},
			"backlog_len": {0, 0}, "cpu": {0, 1}}, []string{"input_qlen", "process_qlen", ""}},
		{"softnet_stat-6.12-composed", 9, map[string][]float64{"processed": {20282, 41412}, "dropped": {0, 5},
			"time_squeeze": {39, 62}, "received_rps": {17, 726}, "flow_limit_count": {0, 2},
			"backlog_len": {3, 0}, "cpu": {0, 1}, "input_qlen": {2, 0}, "process_qlen": {1, 0}}, nil},
		{"interrupts-6.1", 28, map[string][]float64{"CAL": {1387, 1836}, "RES": {4, 29}, "LOC": {2952, 3579},
			"TLB": {12, 2}, "NMI": {0, 0}, "ERR": {0}, "MIS": {0}, "timer": {170, 0}, "i8042": {9, 125},
			"virtio2-input.0": {631, 1}, "virtio2-input.1": {0, 788}, "virtio2-output.1": {1, 4},
			"virtio0-virtqueues": {0, 27}}, []string{"0", "29", "Function"}},
		{"snmp-6.1", 81, map[string][]float64{"Udp.InDatagrams": {13512}, "Udp.RcvbufErrors": {0},
			"Ip.InReceives": {13608}, "Ip.DefaultTTL": {64}, "Tcp.MaxConn": {-1}, "Tcp.RtoMax": {120000},
			"Icmp.OutAddrMaskReps": {0}, "UdpLite.MemErrors": {0}}, []string{"Udp.Udp:"}},
		{"tasks-ksoftirqd", 3, map[string][]float64{"ksoftirqd/0": {0.44}, "ksoftirqd/1": {1.87}, "total": {2.31}}, nil},
		{"tasks-napi", 4, map[string][]float64{"napi/eth0-9": {5.12}, "napi/eth0-10": {0.96},
			"napi/veth1-11": {0.40}, "total": {6.48}}, nil},
		{"qdisc-host", 28, map[string][]float64{"two.packets": {4}, "two.bytes": {270}, "va.packets": {6},
			"va.requeues": {0}, "twop.qlen": {0}, "vb.drops": {0}}, []string{"8014:1.packets", "two"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			src := ""
			for _, f := range fixtures {
				if f.file == tc.file {
					src = f.source
				}
			}
			s, err := ParseSource(src, readFixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(s) != tc.nfields {
				t.Errorf("got %d fields, want %d: %v", len(s), tc.nfields, s)
			}
			for f, want := range tc.want {
				if got := s[f]; !slices.Equal(got, want) {
					t.Errorf("%s = %v, want %v", f, got, want)
				}
			}
			for _, f := range tc.absent {
				if _, ok := s[f]; ok {
					t.Errorf("field %q present", f)
				}
			}
		})
	}
}

func TestSeriesValue(t *testing.T) {
	s, err := ParseSource("interrupts#2", readFixture(t, "interrupts-6.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		cpu   int
		want  float64
		ok    bool
	}{
		{"CAL", 0, 1387, true}, {"CAL", 1, 1836, true}, {"CAL", -1, 3223, true}, {"CAL", 2, 0, false},
		{"ERR", -1, 0, true}, {"ERR", 1, 0, false}, {"virtio2-input.1", 1, 788, true}, {"nope", -1, 0, false},
	} {
		if got, ok := s.Value(tc.field, tc.cpu); got != tc.want || ok != tc.ok {
			t.Errorf("Value(%q, %d) = %v, %v; want %v, %v", tc.field, tc.cpu, got, ok, tc.want, tc.ok)
		}
	}
	// No matching task is a snapshot too: nothing ran.
	if s, err := ParseSource("tasks:napi/", ""); err != nil || len(s) != 1 || s["total"][0] != 0 {
		t.Errorf("empty tasks: %v, %v; want total 0", s, err)
	}
}

func TestParseSourceRejects(t *testing.T) {
	hex := func(n int) string { return strings.TrimSpace(strings.Repeat("00000001 ", n)) }
	for _, tc := range []struct{ name, source, text, wantErr string }{
		{"unknown source", "softnet", hex(13), "unknown source"},
		{"tasks without colon", "tasks", "1 a 1 1 0", "unknown source"},
		{"softirqs empty", "softirqs", "", "not /proc/softirqs"},
		{"softirqs no header", "softirqs", "NET_RX: 1 2\nRCU: 1 2", "not /proc/softirqs"},
		{"softirqs short row", "softirqs", "CPU0 CPU1\nNET_RX: 1", "want a name and 2 counts"},
		{"softirqs extra words", "softirqs", "CPU0\nNET_RX: 1 x", "want a name and 1 counts"},
		{"softirqs twice", "softirqs", "CPU0\nRCU: 1\nRCU: 2", "listed twice"},
		{"softirqs no colon", "softirqs", "CPU0\nRCU 1", "LABEL"},
		{"softnet empty", "softnet_stat", "\n\n", "empty"},
		{"softnet 12 columns", "softnet_stat", hex(12), "has 12 columns"},
		{"softnet 14 columns", "softnet_stat", hex(14), "has 14 columns"},
		{"softnet ragged", "softnet_stat", hex(13) + "\n" + hex(15), "line 2"},
		{"softnet not hex", "softnet_stat", "zz" + hex(13)[2:], "invalid syntax"},
		{"softnet over 32 bits", "softnet_stat", "100000000" + hex(13)[8:], "out of range"},
		{"interrupts empty", "interrupts", "", "not /proc/interrupts"},
		{"interrupts no header", "interrupts", "  0: 1 2 IO-APIC timer", "not /proc/interrupts"},
		{"interrupts short IRQ", "interrupts", "CPU0 CPU1\n  5: 1 IO-APIC 5-edge x", "IRQ 5 has 1 counts"},
		{"interrupts one count and text", "interrupts", "CPU0 CPU1\nCAL: 5 Function call", "CAL has 1 counts"},
		{"interrupts no counts", "interrupts", "CPU0 CPU1\nCAL: Function call", "LABEL"},
		{"interrupts twice", "interrupts", "CPU0\nCAL: 1 x\nCAL: 2 x", "listed twice"},
		{"interrupts overflow", "interrupts", "CPU0\nLOC: 99999999999999999999 x", "out of range"},
		{"snmp empty", "snmp", "", "not /proc/net/snmp"},
		{"snmp odd", "snmp", "Ip: A B\nIp: 1 2\nUdp: A", "not /proc/net/snmp"},
		{"snmp groups differ", "snmp", "Ip: A B\nTcp: 1 2", "do not pair up"},
		{"snmp counts differ", "snmp", "Ip: A B\nIp: 1", "do not pair up"},
		{"snmp no colon", "snmp", "Ip A\nIp 1", "do not pair up"},
		{"snmp not a number", "snmp", "Ip: A\nIp: x", "Ip.A"},
		{"snmp twice", "snmp", "Ip: A\nIp: 1\nIp: A\nIp: 2", "listed twice"},
		{"tasks short", "tasks:k", "12 ksoftirqd/0 1 2", "want \"pid comm"},
		{"tasks bad pid", "tasks:k", "x ksoftirqd/0 1 2 0", "invalid syntax"},
		{"tasks negative ticks", "tasks:k", "12 ksoftirqd/0 1 -2 0", "invalid syntax"},
		{"tasks total", "tasks:", "12 total 1 1 0", "clashes"},
		{"qdisc short", "qdisc", "eth0 root 1: pfifo", "no packets"},
		{"qdisc three words", "qdisc", "eth0 root 1:", "want \"dev parent handle kind\""},
		{"qdisc odd pairs", "qdisc:a", "eth0 root 1: pfifo packets", "name/value pairs"},
		{"qdisc not a number", "qdisc", "eth0 root 1: pfifo packets x bytes 0 drops 0 overlimits 0 requeues 0 backlog 0 qlen 0", "packets: strconv.ParseUint"},
		{"qdisc negative", "qdisc", "eth0 root 1: pfifo packets -1 bytes 0 drops 0 overlimits 0 requeues 0 backlog 0 qlen 0", "invalid syntax"},
		{"qdisc missing counter", "qdisc", "eth0 root 1: pfifo packets 1 bytes 0 drops 0 overlimits 0 requeues 0 backlog 0", "no qlen"},
		{"qdisc two roots", "qdisc", "eth0 root 1: pfifo packets 1 bytes 0 drops 0 overlimits 0 requeues 0 backlog 0 qlen 0\n" +
			"eth0 root 2: pfifo packets 1 bytes 0 drops 0 overlimits 0 requeues 0 backlog 0 qlen 0", "a second root qdisc on eth0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSource(tc.source, tc.text)
			if err == nil {
				t.Fatalf("accepted: %v", s)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzParseSource(f *testing.F) {
	sources := []string{"softirqs", "softnet_stat", "interrupts", "snmp", "qdisc:t", "tasks:x"}
	for _, fx := range fixtures {
		i := slices.Index(sources, fx.source)
		if i < 0 {
			i = len(sources) - 1
		}
		f.Add(uint8(i), readFixture(f, fx.file))
	}
	f.Fuzz(func(t *testing.T, which uint8, text string) {
		src := sources[int(which)%len(sources)]
		s, err := ParseSource(src, text)
		if err != nil {
			return
		}
		n := -1
		for field, vals := range s {
			if sum, ok := s.Value(field, -1); !ok || math.IsNaN(sum) {
				t.Fatalf("%s: field %q = %v has no sum", src, field, vals)
			}
			if src == "softnet_stat" && n >= 0 && len(vals) != n {
				t.Fatalf("softnet_stat fields of different lengths: %v", s)
			}
			n = len(vals)
		}
		if src == "softirqs" {
			si, err := ParseSoftirqs(text)
			if err != nil || len(si) != len(s) {
				t.Fatalf("ParseSoftirqs disagrees: %v, %v", si, err)
			}
		}
	})
}

// TestReal612Captures checks exact values of files read from the lab's
// stock-6.12 guest (2 CPUs, 2 MSI-X queue pairs).
func TestReal612Captures(t *testing.T) {
	for _, tc := range []struct {
		source, file, field string
		cpu                 int
		want                float64
	}{
		{"softnet_stat", "softnet_stat-6.12", "processed", 0, 0x18cb},
		{"softnet_stat", "softnet_stat-6.12", "processed", 1, 0x2042},
		{"softnet_stat", "softnet_stat-6.12", "time_squeeze", 1, 0x2b},
		{"softnet_stat", "softnet_stat-6.12", "input_qlen", -1, 0},
		{"softnet_stat", "softnet_stat-6.12", "cpu", 1, 1},
		{"interrupts", "interrupts-6.12", "CAL", 1, 1797},
		{"interrupts", "interrupts-6.12", "virtio2-input.1", 1, 1017},
		{"snmp", "snmp-6.12", "Udp.InDatagrams", -1, 14583},
		{"softirqs", "softirqs-6.12", "NET_RX", -1, 5963 + 5875},
	} {
		b, err := os.ReadFile("testdata/proc/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSource(tc.source, string(b))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got, ok := s.Value(tc.field, tc.cpu); !ok || got != tc.want {
			t.Errorf("%s %s cpu %d = %v, %v; want %v", tc.file, tc.field, tc.cpu, got, ok, tc.want)
		}
	}
}

func TestParseNetdev(t *testing.T) {
	text := "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
		"    lo:     560       8    0    0    0     0          0         0      560       8    0    0    0     0       0          0\n" +
		"  eth0: 1339276   20006    0    3    0     0          0         0        0       0    0    0    0     0       0          0\n"
	s, err := ParseSource("netdev", text)
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]float64{"eth0.rx_packets": 20006, "eth0.rx_drop": 3, "lo.tx_bytes": 560} {
		if got, ok := s.Value(field, -1); !ok || got != want {
			t.Errorf("%s = %v, %v; want %v", field, got, ok, want)
		}
	}
	m, err := Parse("netdev.eth0.rx_packets")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m.From(s); got != 20006 {
		t.Errorf("netdev.eth0.rx_packets = %v", got)
	}
	if _, err := ParseSource("netdev", "  eth0: 1 2 3\n"); err == nil {
		t.Error("a short line was accepted")
	}
}

func TestParseQdisc(t *testing.T) {
	const line = "packets 10 bytes 900 drops 2 overlimits 3 requeues 4 backlog 150 qlen 1"
	for _, tc := range []struct {
		name, text string
		want       map[string]float64 // every field, exactly
	}{
		{"empty namespace", "", map[string]float64{}},
		{"root only", "eth0 root 0: pfifo_fast " + line, map[string]float64{"eth0.packets": 10, "eth0.bytes": 900,
			"eth0.drops": 2, "eth0.overlimits": 3, "eth0.requeues": 4, "eth0.backlog": 150, "eth0.qlen": 1}},
		{"children and ingress are not kept", "eth0 8001:1 0: pfifo_fast " + line + "\neth0 ingress ffff: ingress " + line,
			map[string]float64{}},
		{"unknown names are kept", "lo root 0: noqueue " + line + " new 7\n", map[string]float64{"lo.packets": 10,
			"lo.bytes": 900, "lo.drops": 2, "lo.overlimits": 3, "lo.requeues": 4, "lo.backlog": 150, "lo.qlen": 1, "lo.new": 7}},
		{"64-bit bytes", "eth0 root 1: pfifo packets 1 bytes 18446744073709551615 drops 0 overlimits 0 requeues 0 backlog 0 qlen 0",
			map[string]float64{"eth0.packets": 1, "eth0.bytes": 18446744073709551615, "eth0.drops": 0, "eth0.overlimits": 0,
				"eth0.requeues": 0, "eth0.backlog": 0, "eth0.qlen": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSource("qdisc", tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if len(s) != len(tc.want) {
				t.Errorf("got %d fields, want %d: %v", len(s), len(tc.want), s)
			}
			for f, want := range tc.want {
				if got, ok := s.Value(f, -1); !ok || got != want {
					t.Errorf("%s = %v, %v; want %v", f, got, ok, want)
				}
			}
		})
	}
}
