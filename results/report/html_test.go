package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/internal/wire"
	"napilab/results"
	"napilab/results/stats"
)

// reportParse checks that page is well-formed: the pages close every
// element (void ones as <meta/>), so a strict XML parser must accept them,
// and every tag of the inline SVG must balance. It counts the elements.
func reportParse(t *testing.T, page string) map[string]int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	counts := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return counts
		}
		if err != nil {
			line, _ := d.InputPos()
			lines := strings.Split(page, "\n")
			t.Fatalf("page is not well-formed: %v; line %d: %s", err, line, lines[min(line, len(lines))-1])
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
}

func reportHTML(t *testing.T, r *results.Result, samples []results.SampleLine) (string, map[string]int) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r, samples); err != nil {
		t.Fatal(err)
	}
	return b.String(), reportParse(t, b.String())
}

func reportContains(t *testing.T, page string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}

func TestHTMLSplatRun(t *testing.T) {
	r, samples := reportFixture(t, ".")
	page, n := reportHTML(t, r, samples)
	reportContains(t, page,
		`<span class="badge FAIL">FAIL</span> lkdtm-warning`, // the verdict, coloured by its class
		`<h2>Assertions`, `<span class="bad">FAIL</span>`, "no kernel splat",
		`<h2>Timeline</h2>`, `<h2>Splats`, `<details class="splat" open="open"><summary>S1 WARNING in lkdtm_WARNING`,
		"at drivers/misc/lkdtm/bugs.c:85 lkdtm_WARNING&#43;0x8/0xb", // the report
		`<h2>QEMU command line</h2>`, "-append &#39;console=ttyS0", `<h2>Console tail</h2>`,
		"release 6.1.192", "5ab96f39edb235ae", "boot 1.45s")
	if n["svg"] < 1 || n["rect"] < 3 {
		t.Errorf("want the timeline SVG with step bars, got %v", n)
	}
	// The splat's red marker and its label are in the SVG.
	reportContains(t, page, `stroke="`+svgRed+`" stroke-width="1.5" stroke-dasharray="4 2"`, `>S1 WARNING in lkdtm_WARNING</text>`)
}

func TestHTMLLoadRun(t *testing.T) {
	r, samples := reportFixture(t, "load")
	page, n := reportHTML(t, r, samples)
	reportContains(t, page, `<span class="badge PASS">PASS</span>`, "every assertion held (6 of 6)",
		"received packets/s", "NET_RX softirqs/s per CPU", ">veth-udp</text>", ">nic-udp</text>",
		"softirqs.NET_RX per CPU", "ksoftirqd.cpu_seconds per CPU", // per-CPU bars
		"<td>veth-udp</td>", "1.11%", // loads table
		"napi/vrx-11", "<b>after setup</b>", "<b>at end</b>", // devices
		"toggle threaded", "a hollow last point")
	if n["polyline"] != 4 { // two loads, two CPUs
		t.Errorf("want 4 polylines (2 loads, 2 CPUs), got %d", n["polyline"])
	}
	if n["svg"] != 3 { // the timeline and two per-CPU charts
		t.Errorf("want 3 svg elements, got %d", n["svg"])
	}
	if strings.Contains(page, svgRed+`" stroke-width="1.5" stroke-dasharray`) {
		t.Errorf("a splat marker on a run without splats")
	}
}

// TestTimelinePlacement checks the time axis: load seconds start at their
// start step, splats at their step's start plus offset, or at their printk
// time moved onto the timeline by a sample's two clocks.
func TestTimelinePlacement(t *testing.T) {
	r := &results.Result{
		Timings: results.Timings{Timeline: 5},
		Steps: []results.Step{{Name: "sleep 1s", Start: 0, Duration: 1}, {Name: "start a, b", Start: 1, Duration: 0.1},
			{Name: "sleep 1s", Start: 1.1, Duration: 1}, {Name: "stop a, b", Start: 3.5, Duration: 0.2}},
		Loads: []results.Load{{Name: "b", PerSecond: []uint64{10, 20, 5}}},
		Splats: []results.Splat{
			{Title: "in second sleep", Step: "sleep 1s", Offset: 0.5, Time: 9},
			{Title: "before the timeline", Time: 3.0},
			{Title: "off the axis", Time: 900},
		},
	}
	samples := []results.SampleLine{{Host: 0.25, Sample: results.SampleSnapshot{T: 2.75}}} // guest uptime = host + 2.5
	tl := newTimeline(r, samples)
	if l := tl.loads[0]; l.xs[0] != 1.5 || l.xs[2] != 3.5 || !l.partial {
		t.Errorf("load b at %v (partial %v), want 1.5, 2.5, 3.5 and a partial last second", l.xs, l.partial)
	}
	// Of the two "sleep 1s" steps, the first holds offset 0.5.
	want := []float64{0.5, 0.5}
	if len(tl.splats) != 2 {
		t.Fatalf("placed %v, want 2 splats", tl.splats)
	}
	for i, m := range tl.splats {
		if math.Abs(m.x-want[i]) > 1e-9 {
			t.Errorf("splat %q at %g, want %g", m.title, m.x, want[i])
		}
	}
	if tl.lanes != 1 {
		t.Errorf("%d lanes, want 1 (no step overlaps another)", tl.lanes)
	}
}

func TestHTMLEscapes(t *testing.T) {
	evil := `<script>alert("x")</script>&amp;'`
	r := &results.Result{Scenario: evil, Verdict: results.Fail, Reasons: []string{evil}, QEMU: "qemu -append '" + evil + "'",
		Kernel:  results.Kernel{Spec: evil, Key: evil, Release: evil},
		Params:  map[string]string{"p": evil},
		Asserts: []results.Assert{{Name: evil, Kind: evil, Measured: evil, Bound: evil, Detail: evil}},
		Steps: []results.Step{{Name: evil, Duration: 1, Error: evil}, {Name: "start " + evil, Start: 0.5, Duration: 0.1},
			{Name: "exec", Iterations: 1, Outputs: []results.ExecOutput{{Run: 1, File: "javascript:alert(1)", Stdout: evil, Stderr: evil}}}},
		Loads:   []results.Load{{Name: evil, PerSecond: []uint64{1, 2}}},
		Splats:  []results.Splat{{Title: evil, Report: evil, Step: evil, Offset: 0.2, Type: results.CrashBug}},
		Hang:    &results.Hang{Step: evil, Function: evil, Evidence: evil, Deadline: evil},
		Figures: map[string]float64{evil + ".cpu0": 1, "nan.cpu0": math.NaN()},
		Devices: map[string][]wire.Device{evil: {{Name: evil, NAPI: []string{evil}}}}, ConsoleTail: evil,
	}
	page, n := reportHTML(t, r, nil)
	if strings.Contains(page, "<script") || strings.Contains(page, `alert("x")`) {
		t.Errorf("unescaped text in the page")
	}
	reportContains(t, page, "&lt;script&gt;")
	if strings.Contains(page, `href="javascript:`) {
		t.Errorf("a script URL in a link")
	}
	if n["script"] != 0 {
		t.Errorf("%d script elements", n["script"])
	}
}

// TestHTMLExecOutput checks that an exec step's outputs show under it: one
// collapsible block per kept run, open when the run failed, with a link to
// its file and a word on the runs not kept.
func TestHTMLExecOutput(t *testing.T) {
	r := &results.Result{Verdict: results.Fail, Steps: []results.Step{
		{Name: "sleep 1s", Line: 5, Duration: 1, Iterations: 1},
		{Name: "exec", Line: 12, Start: 1, Duration: 0.5, Iterations: 6, Error: "sh exited 3: boom", Outputs: []results.ExecOutput{
			{Run: 1, File: "exec/12-1.log", Stdout: "<b>ready</b>\n"},
			{Run: 2, File: "exec/12-2.log"},
			{Run: 6, ExitCode: 3, File: "exec/12-6.log", Stdout: "partial\n", Stderr: "boom & bust\n"},
		}},
	}}
	page, n := reportHTML(t, r, nil)
	reportContains(t, page,
		`<details><summary class="small">output of run 1 · exit 0 · <a href="exec/12-1.log">exec/12-1.log</a></summary><pre>&lt;b&gt;ready&lt;/b&gt;`,
		`output of run 2 · exit 0 · <a href="exec/12-2.log">exec/12-2.log</a></summary><p class="small">no output</p>`,
		`<details open="open"><summary class="small">output of run 6 · exit 3`,
		`<pre>partial
</pre><div class="small">stderr</div><pre>boom &amp; bust`,
		"the output of 3 runs in between was not kept")
	if n["details"] != 4 || n["a"] != 3 { // the steps and three runs
		t.Errorf("%d details and %d links, want 4 and 3", n["details"], n["a"])
	}
	// The output follows its step's row, before the next step's.
	if i, j := strings.Index(page, "<td>exec</td>"), strings.Index(page, "output of run 1"); i < 0 || j < i {
		t.Errorf("the output is not under its step")
	}
}

func TestHTMLBareResult(t *testing.T) {
	for _, r := range []*results.Result{{}, {Verdict: results.Error, Reasons: []string{"boot failed"}}} {
		page, _ := reportHTML(t, r, nil)
		if strings.Contains(page, "<h2>Timeline</h2>") {
			t.Errorf("a timeline without steps or loads")
		}
	}
}

// reportCompareRuns makes n runs of one side with figure values base+i.
func reportCompareRuns(spec string, n int, base float64) []*results.Result {
	var out []*results.Result
	for i := range n {
		out = append(out, &results.Result{Scenario: "rps-ipi", Verdict: results.Pass, Kernel: results.Kernel{Spec: spec, Release: "6.1.1"},
			Started: time.Date(2026, 11, 29, 21, 0, 2*i, 0, time.UTC),
			Figures: map[string]float64{"softirqs.NET_RX": base + float64(i), "interrupts.CAL": 100, "only <a>": 1}})
	}
	return out
}

func reportSamples(label string, runs []*results.Result) []stats.Sample {
	var out []stats.Sample
	for i, r := range runs {
		for k, v := range r.Figures {
			out = append(out, stats.Sample{Metric: k, Kernel: label, Run: i + 1, Value: v})
		}
	}
	return out
}

func TestCompareHTML(t *testing.T) {
	a, b := reportCompareRuns("stock-6.1", 5, 1000), reportCompareRuns("stock-6.12", 5, 2000)
	b[0].Verdict = results.Fail
	c := stats.Compare("stock-6.1", "stock-6.12", append(reportSamples("stock-6.1", a), reportSamples("stock-6.12", b)...), 0.05, 1)
	var buf bytes.Buffer
	if err := WriteCompareHTML(&buf, c, a, b); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	n := reportParse(t, page)
	reportContains(t, page, "A stock-6.1</span> vs", "B stock-6.12</span>", "1 of 3 figures differ beyond the noise",
		`<tr class="beyond"><td>softirqs.NET_RX</td>`, "B higher", "only &lt;a&gt;",
		`<a href="a-1/report.html">`, `<a href="b-5/report.html">`, `<span class="badge FAIL">FAIL</span>`)
	if n["svg"] != 3 { // one dot plot per figure
		t.Errorf("%d svg elements, want 3", n["svg"])
	}
	if n["circle"] != 3*10 { // every run's value of every figure
		t.Errorf("%d dots, want 30", n["circle"])
	}
	// Figures beyond the noise are plotted first.
	if i, j := strings.Index(page, `aria-label="softirqs.NET_RX"`), strings.Index(page, `aria-label="interrupts.CAL"`); i < 0 || j < i {
		t.Errorf("dot plot order: NET_RX at %d, CAL at %d", i, j)
	}
}

// TestReportFolders writes a run folder and a comparison folder the way the
// lab leaves them, renders their reports and lists them.
func TestReportFolders(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "20261129-211229-lkdtm-warning-stock-6.1")
	os.Mkdir(run, 0o755)
	for _, f := range []string{results.ResultFile, results.SamplesFile} {
		b, err := os.ReadFile(filepath.Join("testdata", "report", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(run, f), b, 0o644)
	}
	r, samples, err := results.LoadRun(run)
	if err != nil || len(samples) != 2 {
		t.Fatalf("LoadRun: %v, %d samples", err, len(samples))
	}
	if err := WriteRun(run, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{KTAPFile, KCIDBFile, HTMLFile} {
		if st, err := os.Stat(filepath.Join(run, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}

	cmpDir := filepath.Join(root, "20261129-220000-compare-rps-ipi")
	a, b := reportCompareRuns("stock-6.1", 2, 1000), reportCompareRuns("stock-6.12", 2, 2000)
	for side, runs := range map[string][]*results.Result{"a": a, "b": b} {
		for i, r := range runs {
			r.Started = r.Started.Add(time.Hour)
			dir := filepath.Join(cmpDir, side+"-"+string(rune('1'+i)))
			os.MkdirAll(dir, 0o755)
			if err := r.Write(dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := stats.Compare("stock-6.1", "stock-6.12", append(reportSamples("stock-6.1", a), reportSamples("stock-6.12", b)...), 0.05, 1)
	f, _ := os.Create(filepath.Join(cmpDir, CompareFile))
	c.WriteJSON(f)
	f.Close()
	os.Mkdir(filepath.Join(root, "not-a-run"), 0o755)

	if !IsComparison(cmpDir) || IsComparison(run) {
		t.Fatalf("IsComparison is wrong")
	}
	if err := WriteComparison(cmpDir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CompareHTMLFile, "a-1/" + HTMLFile, "b-2/" + KTAPFile} {
		if _, err := os.Stat(filepath.Join(cmpDir, f)); err != nil {
			t.Error(err)
		}
	}
	folders, err := ListFolders(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(folders) != 2 {
		t.Fatalf("listed %+v, want the comparison and the run", folders)
	}
	got, want := folders[0], Folder{Path: cmpDir, Comparison: true, Time: a[0].Started, Scenario: "rps-ipi",
		Kernel: "stock-6.1 vs stock-6.12", Verdict: results.Pass, Note: "0 of 3 figures beyond noise, 2+2 runs"}
	if !got.Time.Equal(want.Time) || got.Path != want.Path || !got.Comparison || got.Kernel != want.Kernel ||
		got.Verdict != want.Verdict || got.Note != want.Note || got.Scenario != want.Scenario {
		t.Errorf("comparison entry %+v, want %+v", got, want)
	}
	if f := folders[1]; f.Path != run || f.Verdict != results.Fail || f.Scenario != "lkdtm-warning" || f.Kernel != "stock-6.1" || f.Comparison {
		t.Errorf("run entry %+v", f)
	}
}

// TestHTMLCoverage shows the series' functions and their calls, and says
// "not exercised" when every one was counted and none ran.
func TestHTMLCoverage(t *testing.T) {
	fn := func(name string, calls uint64, via string, probes ...string) results.FuncCalls {
		return results.FuncCalls{CoverFunc: results.CoverFunc{Func: name, Probes: probes, Via: via}, Calls: calls}
	}
	r := &results.Result{Verdict: results.Pass, Scenario: "rps-ipi", Coverage: &results.Coverage{Funcs: []results.FuncCalls{
		fn("napi_threaded_poll", 0, "", "napi_threaded_poll"), fn("napi_schedule_rps", 0, "callers", "enqueue_to_backlog")}}}
	page, _ := reportHTML(t, r, nil)
	reportContains(t, page, "functions <span class=\"small\">calls the run counted", "<code>enqueue_to_backlog</code>", "inlined: its callers", "not exercised")
	r.Coverage.Funcs[1].Calls = 12
	if page, _ := reportHTML(t, r, nil); strings.Contains(page, "not exercised") {
		t.Error("a run that called a changed function is said not exercised")
	}
}
