package scenarios

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPerfGood parses the good example: flow-style budgets, percentages as
// fractions, defaults, budget metrics sampled, one noise warning.
func TestPerfGood(t *testing.T) {
	s, err := Open("testdata/perf/good.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Perf
	if p == nil || p.Baseline != BaselineBase || p.Repeat != 10 || p.Alpha != DefaultAlpha || len(p.Budgets) != 7 {
		t.Fatalf("perf = %+v", p)
	}
	if m, drop, rise, _ := p.Budgets[0].Bounds(); m != "udp.rx_pps" || drop != 0.05 || rise != 0 {
		t.Errorf("budget 0 bounds = %q %g %g", m, drop, rise)
	}
	if m, drop, rise, _ := p.Budgets[3].Bounds(); m != "interrupts.CAL/s" || drop != 0 || rise != 0.125 {
		t.Errorf("budget 3 bounds = %q %g %g", m, drop, rise)
	}
	if b := p.Budgets[0]; b.Noise != 0.03 || b.Pos.String() != "testdata/perf/good.yaml:23:7" {
		t.Errorf("budget 0 noise %v at %v", b.Noise, b.Pos)
	}
	var names []string
	for _, m := range s.Metrics() {
		names = append(names, m.Name)
	}
	for _, want := range []string{"softirqs.NET_RX.cpu1", "interrupts.CAL", "napi.polls.eth0.rx-0.softirq"} {
		if !slices.Contains(names, want) {
			t.Errorf("Metrics() = %v lacks the budgeted %s", names, want)
		}
	}
	if !s.NeedsPolls() {
		t.Error("a budget on napi.polls does not ask for who polled")
	}
	want := []string{"testdata/perf/good.yaml:29:7: warning: budget max_rise 2% on udp.rx_pps is tighter than the noise allows: " +
		"at CV 6% it needs 222 runs per side (80% power), max_repeat is 20"}
	if !slices.Equal(s.Warnings, want) {
		t.Errorf("warnings = %q\nwant %q", s.Warnings, want)
	}
}

const perfBase = base + `perf:
  budgets:
    - {metric: l.rx_pps, max_drop: 5%}
`

func TestPerfDefaults(t *testing.T) {
	s, err := Parse("x.yaml", []byte(perfBase), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Perf; p.Baseline != "base" || p.Repeat != 5 || p.Alpha != 0.05 || p.Pos.String() != "x.yaml:9:3" {
		t.Errorf("perf = %+v", p)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings without noise: %q", s.Warnings)
	}
	s, err = Parse("x.yaml", []byte(base), nil)
	if err != nil || s.Perf != nil || len(s.Metrics()) != 0 {
		t.Errorf("a scenario without perf: %+v, %v", s.Perf, err)
	}
}

// TestPerfWarnAtMaxRepeat: a budget the first repeat runs cannot decide but
// the second look's max_repeat can lints clean; one past max_repeat warns.
func TestPerfWarnAtMaxRepeat(t *testing.T) {
	// 10% noise on a 20% budget needs 7 runs per side.
	for _, tc := range []struct {
		maxRepeat string
		warn      bool
	}{{"8", false}, {"6", true}} {
		src := base + "perf:\n  repeat: 5\n  max_repeat: " + tc.maxRepeat + "\n  budgets:\n    - {metric: l.rx_pps, max_drop: 20%, noise: 10%}\n"
		s, err := Parse("x.yaml", []byte(src), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.Warnings) == 1; got != tc.warn || len(s.Warnings) > 1 {
			t.Errorf("max_repeat %s: warnings %q, want a warning %v", tc.maxRepeat, s.Warnings, tc.warn)
		}
	}
}

func TestPerfRules(t *testing.T) {
	for _, tc := range []struct {
		name, perf, want string // want "" = valid
	}{
		{"kernel spec baseline", "  baseline: kernels/stock-6.1.yaml\n", ""},
		{"stored baseline", "  baseline: udp-flood-6.1\n", ""},
		{"bad stored name", "  baseline: a/b\n", `perf baseline "a/b": want base`},
		{"repeat at the floor", "  repeat: 4\n", ""},
		{"repeat under the floor", "  repeat: 3\n", "x.yaml:9:3: perf repeat 3: the rank test cannot reach p < 0.05 with fewer than 4 runs per side"},
		{"floor grows with a smaller alpha", "  repeat: 4\n  alpha: 0.01\n", "perf repeat 4: the rank test cannot reach p < 0.01 with fewer than 5 runs per side"},
		{"negative repeat", "  repeat: -1\n", "perf repeat -1"},
		{"alpha 1", "  alpha: 1\n", "perf alpha 1: want more than 0 and less than 1"},
		{"negative alpha", "  alpha: -0.1\n", "perf alpha -0.1"},
		{"rate of a metric", "    - {metric: snmp.Udp.InDatagrams/s, max_drop: 5%}\n", ""},
		{"sent pps", "    - {metric: l.sent_pps, max_drop: 5%}\n", ""},
		{"per datagram", "    - {metric: softirqs.NET_RX per datagram, max_rise: 5%}\n", ""},
		{"who polled", "    - {metric: napi.packets.any.any.ksoftirqd, max_rise: 5%}\n", ""},
		{"per-CPU", "    - {metric: ksoftirqd.cpu_seconds.cpu1, max_rise: 5%}\n", ""},
		{"no rate of a load figure", "    - {metric: l.rx_pps/s, max_drop: 5%}\n", `budget metric "l.rx_pps/s": not a figure`},
		{"unknown load", "    - {metric: m.rx_pps, max_drop: 5%}\n", `(did you mean "l.rx_pps"?)`},
		{"typo", "    - {metric: softnet.procesed, max_drop: 5%}\n", `(did you mean "softnet.processed"?)`},
		{"99.9% is a tolerance", "    - {metric: l.rx_pps, max_rise: 99.9%}\n", ""},
		{"both directions", "    - {metric: l.rx_pps, max_rise: 5%, max_drop: 5%}\n", "x.yaml:11:7: budget on l.rx_pps needs exactly one of max_drop, max_rise and max_above"},
		{"rise of 100%", "    - {metric: l.rx_pps, max_rise: 100%}\n", "budget max_rise 100%: want less than 100%"},
		{"fraction", "    - {metric: l.rx_pps, max_rise: 0.1}\n", `x.yaml:11:36: bad percentage "0.1" in max_rise: want a number above 0 with a % sign`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := perfBase
			if strings.HasPrefix(tc.perf, "    -") {
				src += tc.perf
			} else {
				src = strings.Replace(src, "perf:\n", "perf:\n"+tc.perf, 1)
			}
			_, err := Parse("x.yaml", []byte(src), nil)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Percent // 0 = rejected
		out  string
	}{
		{"5%", 0.05, "5%"}, {"12.5%", 0.125, "12.5%"}, {"7%", 0.07, "7%"}, {"100%", 1, "100%"},
		{"0.05", 0, ""}, {"5", 0, ""}, {"0%", 0, ""}, {"-5%", 0, ""}, {"5 %", 0, ""}, {"%", 0, ""}, {".5%", 0, ""},
	} {
		got, err := parsePercent(tc.in)
		if got != tc.want || (err == nil) != (tc.want != 0) {
			t.Errorf("parsePercent(%q) = %v, %v; want %v", tc.in, float64(got), err, float64(tc.want))
		}
		if tc.want != 0 && got.String() != tc.out {
			t.Errorf("%q written back as %q", tc.in, got.String())
		}
	}
}

// TestMeasureHash: what the samples depend on changes the hash; budgets,
// names, descriptions, comments and YAML style do not.
func TestMeasureHash(t *testing.T) {
	src := "name: h\ndescription: one\nparams:\n  rate: \"100\"\n" + strings.Replace(perfBase, "port: 9}}", "port: 9}, rate: \"${rate}\"}", 1)
	hash := func(t *testing.T, src string, params map[string]string) string {
		t.Helper()
		s, err := Parse("x.yaml", []byte(strings.Replace(src, "name: t\n", "", 1)), params)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.MeasureHash) != 64 {
			t.Fatalf("hash %q", s.MeasureHash)
		}
		return s.MeasureHash
	}
	h := hash(t, src, nil)
	for _, tc := range []struct {
		name, old, new string
		params         map[string]string
		same           bool
	}{
		{"budget", "max_drop: 5%", "max_drop: 7%", nil, true},
		{"more budgets", "max_drop: 5%}", "max_drop: 5%}\n    - {metric: l.sent_pps, max_rise: 5%}\n  repeat: 9", nil, true},
		{"description", "description: one", "description: two", nil, true},
		{"name", "name: h", "name: other", nil, true},
		{"comment", "timeline:", "# the timeline\ntimeline: # starts here", nil, true},
		{"block style", "  l: {kind: udp, from: host, to: {nic: eth0, port: 9}, rate: \"${rate}\"}",
			"  l:\n    kind: \"udp\"\n    from: host\n    to: {nic: eth0, port: 9}\n    rate: ${rate}", nil, true},
		{"reference or value", `rate: "${rate}"`, `rate: 100`, nil, true},
		{"no perf", "perf:\n  budgets:\n    - {metric: l.rx_pps, max_drop: 5%}\n", "", nil, true},
		{"param override", "", "", map[string]string{"rate": "200"}, false},
		{"param default", `rate: "100"`, `rate: "300"`, nil, false},
		{"load", "port: 9}", "port: 10}", nil, false},
		{"timeline", "  - start: l\n", "  - start: l\n  - sleep: 1s\n", nil, false},
		{"machine", "name: h\n", "name: h\nmachine: {cpus: 3}\n", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := strings.Replace(src, tc.old, tc.new, 1)
			if tc.old != "" && changed == src {
				t.Fatalf("%q not in the source", tc.old)
			}
			if got := hash(t, changed, tc.params); (got == h) != tc.same {
				t.Errorf("hash changed: %v, want changed: %v", got != h, !tc.same)
			}
		})
	}
}

// TestMeasureHashIncludes: the hash covers what a fragment brings in.
func TestMeasureHashIncludes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	write("frag.yaml", "machine: {memory_mb: 512}\n")
	main := write("main.yaml", "include: [frag.yaml]\n"+perfBase)
	a, err := Open(main, nil)
	if err != nil {
		t.Fatal(err)
	}
	write("frag.yaml", "machine: {memory_mb: 1024}\n")
	b, err := Open(main, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.MeasureHash == b.MeasureHash {
		t.Error("a fragment's change left the hash alone")
	}
}

func TestPerfExplain(t *testing.T) {
	s, err := Open("testdata/perf/good.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s.Explain(&b)
	for _, want := range []string{
		"perf: against base (the tested kernel's spec without its patches), 10 runs per side (up to 20 when a budget is undecided), rank test at alpha 0.05; " +
			"a budget FAILs when the change is beyond both the noise and its tolerance\n",
		"  - FAIL if udp.rx_pps drops by more than 5% (noise 3%: needs 9 runs per side at 80% power) (line 23)\n",
		"  - FAIL if interrupts.CAL/s rises by more than 12.5% (noise not measured) (line 26)\n",
		"  - FAIL if udp.rx_pps rises by more than 2% (noise 6%: needs 222 runs per side at 80% power) (line 29)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, b.String())
		}
	}
	for _, tc := range []struct{ baseline, want string }{
		{"kernels/stock-6.1.yaml", "perf: against kernel spec kernels/stock-6.1.yaml,"},
		{"udp-6.1", "perf: against stored baseline udp-6.1,"},
	} {
		s, err := Parse("x.yaml", []byte(strings.Replace(perfBase, "perf:\n", "perf:\n  baseline: "+tc.baseline+"\n", 1)), nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		s.Explain(&b)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("explain lacks %q:\n%s", tc.want, b.String())
		}
	}
}

func TestPerfSchema(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties map[string]any `json:"properties"`
		Defs       map[string]struct {
			AnyOf []struct {
				Type    string `json:"type"`
				Pattern string `json:"pattern"`
			} `json:"anyOf"`
			Properties map[string]struct {
				Ref string `json:"$ref"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Defs["Scenario"].Properties["perf"]; !ok {
		t.Errorf("Scenario lacks perf: %v", doc.Defs["Scenario"].Properties)
	}
	for _, k := range []string{"baseline", "repeat", "alpha", "budgets"} {
		if _, ok := doc.Defs["Perf"].Properties[k]; !ok {
			t.Errorf("Perf lacks %q", k)
		}
	}
	budget := doc.Defs["Budget"].Properties
	for _, k := range []string{"max_drop", "max_rise", "noise"} {
		if p := budget[k]; p.Ref != "#/$defs/Percent" {
			t.Errorf("Budget.%s = %+v, want a Percent", k, p)
		}
	}
	// A percentage, or a parameter reference.
	if p := doc.Defs["Percent"].AnyOf; len(p) != 2 || p[0].Type != "string" || p[0].Pattern != percentRe.String() || p[1].Pattern != refSchema.Pattern {
		t.Errorf("Percent = %+v, want a string with the percent pattern or a reference", p)
	}
	if _, ok := budget["Pos"]; ok {
		t.Error("internal Pos leaked into the schema")
	}
}

// TestPerfModes checks perf modes: the mode the parameters select, a
// scenario reopened in another mode, the budgets each mode keeps, and the
// rules (declared parameters, modes that differ, budgets naming real modes).
func TestPerfModes(t *testing.T) {
	s, err := Open("perf/udp-flood.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ModeNames(); !slices.Equal(got, []string{"softirq", "threaded"}) {
		t.Fatalf("modes = %v", got)
	}
	if s.Mode() != "softirq" {
		t.Errorf("default parameters select mode %q, want softirq", s.Mode())
	}
	th, params, err := s.ForMode("threaded", map[string]string{"duration": "3s"})
	if err != nil {
		t.Fatal(err)
	}
	if th.Mode() != "threaded" || params["threaded"] != "1" || params["duration"] != "3s" {
		t.Errorf("ForMode(threaded): mode %q, params %v", th.Mode(), params)
	}
	if !s.PinsMode(map[string]string{"threaded": "1"}) || s.PinsMode(map[string]string{"duration": "3s"}) {
		t.Error("PinsMode: -p threaded pins the mode, -p duration does not")
	}
	// A mode that sets more of the values in force wins over one they
	// include: rr-tail's tcp (threaded=0, proto=tcp) is not softirq
	// (threaded=0), and takes tcp's budgets.
	rr, err := Open("perf/rr-tail.yaml", map[string]string{"threaded": "0", "proto": "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Mode() != "tcp" {
		t.Errorf("rr-tail threaded=0 proto=tcp: mode %q, want tcp", rr.Mode())
	}
	for _, b := range rr.BudgetsInForce() {
		if !slices.Contains(b.Modes, "tcp") {
			t.Errorf("rr-tail [tcp] keeps the budget on %s (modes %v)", b.Metric, b.Modes)
		}
	}
	src := base + `params: {t: "0", u: "0"}
perf:
  modes:
    off: {t: "0"}
    on: {t: "1"}
  budgets:
    - {metric: l.rx_pps, max_drop: 5%}
    - {metric: l.sent_pps, max_drop: 5%, modes: [on]}
`
	for params, want := range map[string]int{"t=0": 1, "t=1": 2} {
		k, v, _ := strings.Cut(params, "=")
		s, err := Parse("x.yaml", []byte(src), map[string]string{k: v})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.BudgetsInForce()); got != want {
			t.Errorf("%s (mode %s): %d budgets in force, want %d", params, s.Mode(), got, want)
		}
	}
	for bad, want := range map[string]string{
		"    off: {t: \"0\"}\n    on: {t: \"1\"}\n":  "",
		"    off: {x: \"0\"}\n    on: {t: \"1\"}\n":  "perf mode off: parameter x is not declared under params:",
		"    off: {t: \"0\"}\n    on: {t: \"0\"}\n":  "perf modes off and on set the same values",
		"    off: {t: \"0\"}\n    a/b: {t: \"1\"}\n": `perf mode "a/b"`,
		"    off: {t: \"0\"}\n    up: {t: \"1\"}\n":  `budget on l.sent_pps: modes: no perf mode "on" (perf.modes has off, up)`,
	} {
		_, err := Parse("x.yaml", []byte(strings.Replace(src, "    off: {t: \"0\"}\n    on: {t: \"1\"}\n", bad, 1)), nil)
		switch {
		case want == "" && err != nil:
			t.Errorf("rejected: %v", err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("modes %q: error = %v, want %q", bad, err, want)
		}
	}
}
