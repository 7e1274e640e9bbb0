package metrics

import (
	"napilab/internal/wire"
	"strings"
	"testing"
)

func TestParseMetric(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Ref
	}{
		{"softirqs.NET_RX", Ref{Source: "softirqs", Field: "NET_RX", CPU: -1}},
		{"softirqs.NET_RX.cpu1", Ref{Source: "softirqs", Field: "NET_RX", CPU: 1}},
		{"softnet.received_rps.cpu0", Ref{Source: "softnet_stat", Field: "received_rps", CPU: 0}},
		{"softnet.process_qlen", Ref{Source: "softnet_stat", Field: "process_qlen", CPU: -1}},
		{"interrupts.CAL.cpu1", Ref{Source: "interrupts", Field: "CAL", CPU: 1}},
		{"interrupts.virtio2-input.0", Ref{Source: "interrupts", Field: "virtio2-input.0", CPU: -1}},
		{"interrupts.virtio2-input.1.cpu1", Ref{Source: "interrupts", Field: "virtio2-input.1", CPU: 1}},
		{"snmp.Udp.RcvbufErrors", Ref{Source: "snmp", Field: "Udp.RcvbufErrors", CPU: -1}},
		{"ksoftirqd.cpu_seconds", Ref{Source: "tasks:ksoftirqd/", Field: "total", CPU: -1}},
		{"ksoftirqd.cpu_seconds.cpu1", Ref{Source: "tasks:ksoftirqd/", Field: "ksoftirqd/1", CPU: 1}},
		{"napi.cpu_seconds", Ref{Source: "tasks:napi/", Field: "total", CPU: -1}},
		{"qdisc.eth0.requeues", Ref{Source: "qdisc", Field: "eth0.requeues", CPU: -1, Dev: "eth0"}},
		{"qdisc.eth0.100.drops", Ref{Source: "qdisc", Field: "eth0.100.drops", CPU: -1, Dev: "eth0.100"}},
		{"qdisc.a/vtx.backlog", Ref{Source: "qdisc:a", Field: "vtx.backlog", CPU: -1, Dev: "vtx", Netns: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Name = tc.name
			if m != tc.want {
				t.Errorf("got %+v, want %+v", m, tc.want)
			}
		})
	}
}

func TestParseMetricRejects(t *testing.T) {
	for _, tc := range []struct{ name, wantErr string }{
		{"", "unknown metric source"},
		{"softirq.NET_RX", "want one of softirqs, softnet, interrupts, snmp, netdev, qdisc, ksoftirqd, napi"},
		{"softnet_stat.dropped", "unknown metric source"},
		{"softirqs", "unknown softirqs field \"\""},
		{"softirqs.NET_RXX", "want one of HI, TIMER, NET_TX, NET_RX"},
		{"softirqs.net_rx", "unknown softirqs field"},
		{"softnet.cpu", "want one of processed, dropped"},
		{"softnet.drops.cpu0", "unknown softnet field \"drops\""},
		{"softnet.dropped.cpu8192", "want cpu0 to cpu8191"},
		{"softnet.dropped.cpu99999999999999999999", "bad cpu"},
		{"interrupts", "bad field \"\""},
		{"interrupts.cpu1", "bad field \"\""},
		{"interrupts.CAL x", "bad field"},
		{"snmp.Udp", "want <Group>.<Name>"},
		{"snmp.Udp.", "want <Group>.<Name>"},
		{"snmp.Udp.InDatagrams.cpu0", "not per CPU"},
		{"ksoftirqd.seconds", "want one of cpu_seconds"},
		{"napi.cpu_seconds.cpu0", "not per CPU"},
		{"qdisc", "want qdisc.<dev>.<counter> or qdisc.<netns>/<dev>.<counter>"},
		{"qdisc.requeues", "want qdisc.<dev>.<counter>"},
		{"qdisc.eth0.requeue", "unknown qdisc counter \"requeue\" in metric \"qdisc.eth0.requeue\", want one of packets, bytes, drops"},
		{"qdisc.eth0.requeues.cpu0", "unknown qdisc counter \"cpu0\""},
		{"qdisc./vtx.drops", "empty netns before /"},
		{"qdisc.a/.drops", "bad device \"\""},
		{"qdisc.a/b/c.drops", "bad device \"b/c\""},
		{"qdisc.et h0.drops", "bad device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.name)
			if err == nil {
				t.Fatalf("accepted: %+v", m)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestMetricFrom reads metrics end to end: name -> source -> fixture -> value.
func TestMetricFrom(t *testing.T) {
	files := map[string]string{"softirqs": "softirqs-6.1", "softnet_stat": "softnet_stat-6.1",
		"interrupts": "interrupts-6.1", "snmp": "snmp-6.1",
		"tasks:ksoftirqd/": "tasks-ksoftirqd", "tasks:napi/": "tasks-napi", "qdisc:t": "qdisc-host"}
	for _, tc := range []struct {
		name string
		want float64
		ok   bool
	}{
		{"softirqs.NET_RX", 109292 + 133108, true},
		{"softirqs.NET_RX.cpu0", 109292, true},
		{"softnet.processed.cpu0", 0xc9a, true},
		{"softnet.received_rps.cpu1", 571, true},
		{"softnet.received_rps", 571, true},
		{"softnet.input_qlen", 0, false}, // 6.1 has no such column
		{"softnet.dropped.cpu2", 0, false},
		{"interrupts.CAL", 1387 + 1836, true},
		{"interrupts.virtio2-input.1.cpu1", 788, true},
		{"interrupts.virtio9-input.0", 0, false},
		{"snmp.Udp.InDatagrams", 13512, true},
		{"snmp.Tcp.MaxConn", -1, true},
		{"ksoftirqd.cpu_seconds", 2.31, true},
		{"ksoftirqd.cpu_seconds.cpu1", 1.87, true},
		{"ksoftirqd.cpu_seconds.cpu5", 0, false},
		{"napi.cpu_seconds", 6.48, true},
		{"qdisc.t/va.packets", 6, true},
		{"qdisc.t/two.packets", 4, true}, // mq sums its children
		{"qdisc.t/vb.requeues", 0, true},
		{"qdisc.t/vc.requeues", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseSource(m.Source, readFixture(t, files[m.Source]))
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := m.From(s); got != tc.want || ok != tc.ok {
				t.Errorf("From = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestKnownMetrics checks every documented pattern parses once filled in.
func TestKnownMetrics(t *testing.T) {
	fill := strings.NewReplacer("<NAME>", "NET_RX", "<ROW>", "CAL", "<Group>", "Udp", "<Name>", "InDatagrams",
		"<napi>", "rx-0", "<context>", "kthread",
		"<dev>", "eth0", "<counter>", "requeues", "<field>", "pid")
	for _, d := range Known {
		pattern := d.Pattern
		if strings.HasPrefix(pattern, "netdev.") {
			pattern = strings.Replace(pattern, "<counter>", "rx_packets", 1)
		}
		base, _ := strings.CutSuffix(fill.Replace(pattern), "[.cpuN]")
		if d.File == "" || d.Unit == "" || d.Meaning == "" {
			t.Errorf("%s: undocumented: %+v", d.Pattern, d)
		}
		if _, err := Parse(base); err != nil {
			t.Errorf("%s: %v", d.Pattern, err)
		}
		_, err := Parse(base + ".cpu1")
		if hasCPU := strings.HasSuffix(d.Pattern, "[.cpuN]"); (err == nil) != d.PerCPU || hasCPU != d.PerCPU {
			t.Errorf("%s: PerCPU %v, but .cpu1 gives %v", d.Pattern, d.PerCPU, err)
		}
	}
}

// TestUnmeasurable: field names no kernel prints are errors that say the
// name meant.
func TestUnmeasurable(t *testing.T) {
	for name, want := range map[string]string{
		"snmp.Udp.InDatagramz":  `unknown snmp field "Udp.InDatagramz" in metric "snmp.Udp.InDatagramz" (did you mean InDatagrams?)`,
		"snmp.Upd.InDatagrams":  `unknown snmp group "Upd"`,
		"snmp.IcmpMsg.InType3":  "",
		"snmp.IcmpMsg.InEchos":  "IcmpMsg has InType<N> and OutType<N>",
		"snmp.Ip.OutTransmits":  "",
		"snmp.Tcp.MaxConn":      "",
		"netdev.eth0.rx_pakets": `unknown netdev counter "rx_pakets" in metric "netdev.eth0.rx_pakets" (did you mean rx_packets?)`,
		"netdev.rx_packets":     "want netdev.<dev>.<counter>",
		"netdev.veth-a.tx_drop": "",
		"netdev.eth0.7.rx_errs": "", // a VLAN device's name holds a dot
	} {
		_, err := Parse(name)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

func TestSchedMetrics(t *testing.T) {
	text := "12 1500000 7 2 ksoftirqd/0\n13 500000 3 1 ksoftirqd/1\n40 2000 1 0 napi/vrx-5\n"
	s, err := ParseSource("sched:ksoftirqd/#2", text)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"ksoftirqd.run_us": 2002, "ksoftirqd.run_us.cpu0": 1500, "ksoftirqd.sleeps.cpu1": 3,
		"ksoftirqd.preempted": 3, "napi.sleeps": 11,
	} {
		m, err := Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m.Source, wire.PrefixSched) {
			t.Errorf("%s: source %q, want sched:", name, m.Source)
		}
		if got, ok := m.From(s); !ok || got != want {
			t.Errorf("%s = %v, %v; want %v", name, got, ok, want)
		}
	}
	if m, _ := Parse("napi.cpu_seconds"); m.Source != wire.PrefixTasks+"napi/" {
		t.Errorf("napi.cpu_seconds reads %q, want the tasks source", m.Source)
	}
	if _, err := ParseSource("sched:napi/", "12 x 1 2 napi/a"); err == nil {
		t.Error("a bad run_ns parsed")
	}
	if s, err := ParseSource("sched:napi/", ""); err != nil || s["sleeps"][0] != 0 {
		t.Errorf("no tasks: %v %v, want sleeps 0", s, err)
	}
}
