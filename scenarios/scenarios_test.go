package scenarios

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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
			wd, _ := os.Getwd()
			got := strings.ReplaceAll(err.Error()+"\n", wd+string(filepath.Separator), "") // the shipped folder, absolute
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

// TestParameterTypes: a scalar that is one reference takes the value as
// YAML, quoted or not; a reference inside a longer scalar is text, typed
// again when the scalar was unquoted; a value may be a list.
func TestParameterTypes(t *testing.T) {
	src := `name: t
params: {q: "2", k: "5", path: "/sys/class/net/eth0/threaded", masks: "[\"1\", \"2\"]", d: 1s}
topology:
  nics: [{name: eth0, address: 10.0.0.2/24, host: 10.0.0.1/24, queues: "${q}"}]
loads:
  l:
    kind: udp
    from: host
    to: {nic: eth0, port: 9}
    rate: ${k}000
    flows: ${q}
timeline:
  - start: l
  - write: {path: "${path}", value: "${q}"}
  - rps: {dev: eth0, cpus: "${masks}"}
  - sleep: "${d}"
  - write: {path: /sys/class/net/eth0/threaded, value: "x${q}"}
`
	s, err := Parse("x.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	l := s.Loads["l"]
	if s.Topology.NICs[0].Queues != 2 || l.Rate != 5000 || l.Flows != 2 {
		t.Errorf("queues %d, rate %d, flows %d; want 2, 5000, 2", s.Topology.NICs[0].Queues, l.Rate, l.Flows)
	}
	if w := s.Timeline[1].Write; w.Path != "/sys/class/net/eth0/threaded" || w.Value != "2" {
		t.Errorf("write %+v", w)
	}
	if r := s.Timeline[2].RPS; !reflect.DeepEqual(r.CPUs, []string{"1", "2"}) {
		t.Errorf("rps cpus %q, want the list", r.CPUs)
	}
	if d := s.Timeline[3].Sleep.D(); d != time.Second {
		t.Errorf("sleep %v", d)
	}
	if v := s.Timeline[4].Write.Value; v != "x2" {
		t.Errorf("a quoted scalar with a reference inside: %q", v)
	}
	// The same file with the quotes dropped where YAML allows it is the same scenario.
	plain := strings.NewReplacer(`queues: "${q}"`, `queues: "${q}"`, `- sleep: "${d}"`, `- sleep: ${d}`).Replace(src)
	if p, err := Parse("x.yaml", []byte(plain), nil); err != nil || p.MeasureHash != s.MeasureHash {
		t.Errorf("quoting changed the scenario: %v", err)
	}
}

// standardYAML loads each file with PyYAML and validates it against the
// schema with python3-jsonschema (make deps installs both): what editors
// and pre-commit hooks see. It prints one line per file that fails.
const standardYAML = `
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
v = jsonschema.validators.validator_for(schema)(schema)
for f in sys.argv[2:]:
    try:
        doc = yaml.safe_load(open(f))
    except yaml.YAMLError as e:
        print(f, "PyYAML:", str(e).replace("\n", " "))
        continue
    for e in v.iter_errors(doc):
        print(f, "schema:", list(e.absolute_path), e.message[:200])
`

// TestStandardYAML: every shipped scenario and fragment is YAML that PyYAML
// loads and that validates against lab scenario schema; a file with an
// unquoted reference in a flow mapping, or a typo, does not.
func TestStandardYAML(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 (make deps installs it with python3-yaml and python3-jsonschema)")
	}
	dir := t.TempDir()
	schema, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	check := func(files ...string) string {
		t.Helper()
		sp := filepath.Join(dir, "schema.json")
		os.WriteFile(sp, schema, 0o644)
		out, err := exec.Command("python3", append([]string{"-c", standardYAML, sp}, files...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("python3: %v\n%s", err, out)
		}
		return string(out)
	}
	files, _ := filepath.Glob("fragments/*.yaml")
	files = append(files, shippedFiles()...)
	if out := check(files...); out != "" {
		t.Errorf("not standard YAML, or not valid against the schema:\n%s", out)
	}
	bad := map[string]string{
		"flow.yaml":  "name: t\nparams: {n: \"2\"}\nloads:\n  l: {kind: udp, from: host, to: {nic: eth0, port: 9}, flows: ${n}}\n",
		"typo.yaml":  "name: t\ntimeline:\n  - slep: 1s\n",
		"typed.yaml": "name: t\nloads:\n  l: {kind: udp, from: host, to: {nic: eth0, port: 9}, flows: many}\n",
	}
	var paths []string
	for name, body := range bad {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		paths = append(paths, p)
	}
	out := check(paths...)
	for name := range bad {
		if !strings.Contains(out, name) {
			t.Errorf("%s passed the check:\n%s", name, out)
		}
	}
}

// TestSchemaFile: scenarios/schema.json, which the shipped files name for
// editors (yaml-language-server), is what lab scenario schema prints
// (go test ./scenarios -run TestSchemaFile -update rewrites it).
func TestSchemaFile(t *testing.T) {
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		os.WriteFile("schema.json", want, 0o644)
	}
	if got, err := os.ReadFile("schema.json"); err != nil || string(got) != string(want) {
		t.Errorf("scenarios/schema.json is not lab scenario schema's output (%v): go test ./scenarios -run TestSchemaFile -update", err)
	}
	files, _ := filepath.Glob("fragments/*.yaml")
	for _, f := range append(files, shippedFiles()...) {
		b, _ := os.ReadFile(f)
		rel, _ := filepath.Rel(filepath.Dir(f), "schema.json")
		if !strings.HasPrefix(string(b), "# yaml-language-server: $schema="+rel+"\n") {
			t.Errorf("%s: the first line is not # yaml-language-server: $schema=%s", f, rel)
		}
	}
}

// TestNewFile: lab scenario new writes a file that lints clean, with each
// choice of shipped fragments, and refuses names and fragments it lacks.
func TestNewFile(t *testing.T) {
	dir := t.TempDir()
	for i, frags := range [][]string{nil, {"nic"}, {"veth-peer"}, {"nic", "veth-peer"}} {
		path := filepath.Join(dir, fmt.Sprintf("n%d.yaml", i))
		if err := WriteNew(path, fmt.Sprintf("n%d", i), frags); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, nil)
		if err != nil {
			t.Errorf("%v: %v", frags, err)
			continue
		}
		if len(s.Warnings) > 0 || len(s.Loads) == 0 || len(s.Loads) != len(frags)+boolInt(len(frags) == 0) {
			t.Errorf("%v: warnings %v, loads %v", frags, s.Warnings, sortedKeys(s.Loads))
		}
		if err := WriteNew(path, "again", frags); err == nil {
			t.Errorf("%s overwritten", path)
		}
	}
	if _, err := NewFile(filepath.Join(dir, "x.yaml"), "x", []string{"../../x"}); err == nil || !strings.Contains(err.Error(), "shipped fragments: nic, veth-peer") {
		t.Errorf("unknown fragment: %v", err)
	}
	if _, err := NewFile(filepath.Join(dir, "x.yaml"), "../x", nil); err == nil {
		t.Error("a name that is a path was accepted")
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestReferenceDoc: the generated part of docs/scenarios.md is current.
func TestReferenceDoc(t *testing.T) {
	const begin, end = "<!-- generated: do not edit below -->\n", "<!-- end of generated -->\n"
	path := filepath.Join("..", "docs", "scenarios.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated markers", path)
	}
	var b strings.Builder
	if err := Reference(&b, "."); err != nil {
		t.Fatal(err)
	}
	want := string(doc[:i]) + begin + b.String() + end + string(doc[j+len(end):])
	if *update {
		os.WriteFile(path, []byte(want), 0o644)
		return
	}
	if want != string(doc) {
		t.Errorf("%s is not current: go test ./scenarios -run TestReferenceDoc -update", path)
	}
	for _, k := range AssertKinds {
		if !strings.Contains(b.String(), "#### `"+k+"`\n\nFields: ") {
			t.Errorf("no fields for %s", k)
		}
	}
}
