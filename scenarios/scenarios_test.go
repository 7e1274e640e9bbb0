package scenarios

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shippedDirs are the folders of shipped scenarios, from this package.
var shippedDirs = []string{".", "ab", "perf", "seeds"}

// shippedFiles lists every shipped scenario.
func shippedFiles() []string {
	var files []string
	for _, dir := range shippedDirs {
		f, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		files = append(files, f...)
	}
	return files
}

func TestShippedScenariosParse(t *testing.T) {
	files := shippedFiles()
	for _, dir := range shippedDirs {
		if f, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); len(f) == 0 {
			t.Errorf("no shipped scenarios in %s", dir)
		}
	}
	for _, f := range files {
		if _, err := Open(f, nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestThreadedToggle(t *testing.T) {
	s, err := Open("threaded-toggle-under-load.yaml", map[string]string{"queues": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Topology.NICs[0].Queues != 4 {
		t.Errorf("queues = %d, want the override 4", s.Topology.NICs[0].Queues)
	}
	if got := s.Timeline[2].Parallel[0].Every.D(); got != 100*time.Millisecond {
		t.Errorf("every = %v", got)
	}
	l := s.Loads["veth-udp"]
	if l.SinkNetns != "" || l.SinkAddr != "10.100.0.2" {
		t.Errorf("veth-udp sink = %q in %q", l.SinkAddr, l.SinkNetns)
	}
	if n := s.Loads["nic-udp"]; !n.From.Host || n.SinkAddr != "10.99.0.2" {
		t.Errorf("nic-udp = %+v", n)
	}
	if s.Asserts[2].Threads.Min != 4 || s.Defaults.Deadline.D() != 10*time.Second {
		t.Errorf("defaults not applied: %+v %v", s.Asserts[2].Threads, s.Defaults.Deadline)
	}
}

const base = `name: t
topology:
  nics: [{name: eth0, address: 10.0.0.2/24, host: 10.0.0.1/24}]
loads:
  l: {kind: udp, from: host, to: {nic: eth0, port: 9}}
timeline:
  - start: l
`

var update = flag.Bool("update", false, "rewrite the .golden files of testdata/broken")

// TestGoldenErrors parses every file of testdata/broken and compares the
// whole error text with NAME.golden.
func TestGoldenErrors(t *testing.T) {
	files, _ := filepath.Glob("testdata/broken/*.yaml")
	if len(files) < 10 {
		t.Fatalf("only %d broken files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Open(f, nil)
			if err == nil {
				t.Fatal("parsed without error")
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				os.WriteFile(golden, []byte(got), 0o644)
				return
			}
			want, _ := os.ReadFile(golden)
			if got != string(want) {
				t.Errorf("errors differ from %s:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

func TestSeveralErrorsReported(t *testing.T) {
	_, err := Parse("x.yaml", []byte(base+"  - stop: a\n  - stop: b\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `"a"`) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("want both undefined loads reported, got %v", err)
	}
}

func TestUndeclaredOverride(t *testing.T) {
	_, err := Parse("x.yaml", []byte(base), map[string]string{"queues": "2"})
	if err == nil || !strings.Contains(err.Error(), "parameter queues is not declared") {
		t.Errorf("error = %v", err)
	}
}

// FuzzParse: no input panics or hangs the parser (go test's -fuzz stops an
// input that runs for more than 10 s); the seeds are every shipped scenario
// and the alias bomb of testdata/limits.
func FuzzParse(f *testing.F) {
	for _, file := range append(shippedFiles(), "testdata/limits/alias-bomb.yaml") {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(base))
	f.Fuzz(func(t *testing.T, b []byte) {
		Parse("fuzz.yaml", b, nil)
	})
}

func TestSchema(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Properties map[string]any  `json:"properties"`
			Additional json.RawMessage `json:"additionalProperties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	step, ok := doc.Defs["Step"]
	if !ok {
		t.Fatalf("no Step definition in %s", b)
	}
	for _, k := range []string{"write", "every", "jitter", "parallel", "xdp", "qdisc", "sched", "wait"} {
		if _, ok := step.Properties[k]; !ok {
			t.Errorf("Step lacks %q", k)
		}
	}
	if _, ok := step.Properties["Pos"]; ok {
		t.Error("internal Pos leaked into the schema")
	}
	if string(step.Additional) != "false" {
		t.Error("unknown step keys are not rejected by the schema")
	}
	if _, ok := doc.Defs["Veth"].Properties["peer"]; !ok || doc.Defs["Veth"].Properties["name"] == nil {
		t.Errorf("Veth does not inline its first end: %v", doc.Defs["Veth"].Properties)
	}
}

func TestReservedDeviceName(t *testing.T) {
	y := strings.Replace(base, "name: eth0,", "name: any,", 1)
	y = strings.Replace(y, "nic: eth0", "nic: any", 1)
	_, err := Parse("x.yaml", []byte(y), nil)
	if err == nil || !strings.Contains(err.Error(), `x.yaml:3:10: device name "any" is reserved`) {
		t.Errorf("error = %v", err)
	}
}

func TestForFlavour(t *testing.T) {
	src := "name: f\nparams:\n  rate: \"100\"\n  d: 1s\nflavours:\n  debug:\n    reason: measured\n    params: {rate: \"10\"}\n" +
		"timeline:\n  - sleep: ${d}\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "f.yaml")
	os.WriteFile(path, []byte(src), 0o644)
	s, err := Open(path, map[string]string{"d": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if same, p, err := s.ForFlavour("", map[string]string{"d": "2s"}); same != s || p["d"] != "2s" || err != nil {
		t.Errorf("the plain flavour reopened the scenario: %v %v", p, err)
	}
	d, p, err := s.ForFlavour(FlavourDebug, map[string]string{"d": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if p["rate"] != "10" || p["d"] != "2s" || d.Timeline[0].Sleep.D() != 2*time.Second {
		t.Errorf("debug params %v, sleep %v; want rate 10 and the user's d", p, d.Timeline[0].Sleep)
	}
	if _, p, _ := s.ForFlavour(FlavourDebug, map[string]string{"rate": "50"}); p["rate"] != "50" {
		t.Errorf("a user's parameter lost to the flavour's: %v", p)
	}
}
