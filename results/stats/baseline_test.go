package stats

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"napilab/results"
)

var baselineHost = Host{CPU: "QEMU Virtual CPU version 2.5+", Cores: 2, QEMU: "7.2.22", Accel: "tcg"}

func baselineExample(name string, created time.Time) *Baseline {
	return &Baseline{
		Name:         name,
		Kernel:       results.Kernel{Spec: "kernels/stock-6.1.yaml", Key: "1234abcd5678ef0123456789", Release: "6.1.0"},
		Scenario:     "udp-flood",
		ScenarioHash: "h1",
		Params:       map[string]string{"rate": "10k", "cpus": "2"},
		Host:         baselineHost,
		Repeat:       2,
		Created:      created,
		Samples: []Sample{
			{Metric: "udp.rx_pps", Kernel: BaselineKernel, Run: 1, Value: 101},
			{Metric: "ipis", Kernel: BaselineKernel, Run: 0, Value: 3},
			{Metric: "udp.rx_pps", Kernel: BaselineKernel, Run: 0, Value: 100},
			{Metric: "ipis", Kernel: BaselineKernel, Run: 1, Value: 4},
		},
	}
}

// TestBaselineRoundTrip saves and loads a baseline: stable sorted bytes, no
// path of this machine, non-finite values dropped, replaced in place.
func TestBaselineRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "baselines")
	b := baselineExample("udp-flood@stock-6.1", time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("CET", 3600)))
	b.Kernel.BzImage = "/root/.cache/napilab/kernels/1234/bzImage"
	b.Kernel.Spec = "/work/main/kernels/stock-6.1.yaml"
	b.Samples = append(b.Samples, Sample{Metric: "udp.rx_pps", Kernel: BaselineKernel, Run: 2, Value: math.NaN()})
	path, err := SaveBaseline(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "udp-flood@stock-6.1.json") {
		t.Errorf("saved to %s", path)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(first), "/root") || strings.Contains(string(first), "/work") {
		t.Errorf("an absolute path of this machine in:\n%s", first)
	}
	list, err := LoadBaselines(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("loaded %d baselines, want 1", len(list))
	}
	want := baselineExample("udp-flood@stock-6.1", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	want.Kernel.Spec = "stock-6.1.yaml"
	want.Samples = []Sample{want.Samples[1], want.Samples[3], want.Samples[2], want.Samples[0]}
	if !reflect.DeepEqual(list[0], want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", list[0], want)
	}
	// Saving what was loaded gives the same bytes; a second save replaces.
	if _, err := SaveBaseline(dir, list[0]); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(path)
	if string(first) != string(second) {
		t.Errorf("the file changed on a load/save round trip:\n%s\nvs\n%s", first, second)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the folder after two saves, want 1 (no temp files left)", len(entries))
	}
}

func TestBaselineNames(t *testing.T) {
	for _, c := range []struct {
		scenario string
		k        results.Kernel
		want     string
	}{
		{"udp-flood", results.Kernel{Spec: "kernels/stock-6.1.yaml"}, "udp-flood@stock-6.1"},
		{"udp-flood", results.Kernel{Spec: "/abs/kernels/stock-6.1.yaml", Flavour: "debug"}, "udp-flood@stock-6.1-debug"},
		{"rr", results.Kernel{Spec: "threaded.yml"}, "rr@threaded"},
	} {
		got := DefaultBaselineName(c.scenario, c.k)
		if got != c.want {
			t.Errorf("DefaultBaselineName(%q, %+v) = %q, want %q", c.scenario, c.k, got, c.want)
		}
		if err := CheckBaselineName(got); err != nil {
			t.Errorf("default name %q is refused: %v", got, err)
		}
	}
	for _, bad := range []string{"", "a@b@c", "../x", "@x", "x@", "a/b", ".hidden"} {
		if CheckBaselineName(bad) == nil {
			t.Errorf("CheckBaselineName(%q) accepted it", bad)
		}
	}
}

func TestHostMismatch(t *testing.T) {
	o := Host{CPU: "AMD EPYC", Cores: 8, QEMU: "8.2.1", Accel: "kvm"}
	if got := baselineHost.Mismatch(baselineHost); got != "" {
		t.Errorf("same host: %q", got)
	}
	want := `QEMU 7.2.22 vs 8.2.1, accel tcg vs kvm, cores 2 vs 8, CPU "QEMU Virtual CPU version 2.5+" vs "AMD EPYC"`
	if got := baselineHost.Mismatch(o); got != want {
		t.Errorf("Mismatch = %q, want %q", got, want)
	}
}

// TestFindBaseline checks the choice of the newest fitting baseline and the
// reason given for each kind of mismatch.
func TestFindBaseline(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 12, d, 0, 0, 0, 0, time.UTC) }
	old, mid, other := baselineExample("old", day(1)), baselineExample("mid", day(2)), baselineExample("other", day(3))
	other.Kernel.Key = "ffff0000ffff0000"
	list := []*Baseline{old, mid, other}
	const key = "1234abcd5678ef0123456789"
	for _, c := range []struct {
		name, key, hash string
		host            Host
		want            *Baseline
		reasons         []string
	}{
		{"", key, "h1", baselineHost, mid, nil},
		{"old", key, "h1", baselineHost, old, nil},
		{"other", key, "h1", baselineHost, nil, []string{"other: recorded for kernel key ffff0000ffff, this kernel is 1234abcd5678"}},
		{"old", key, "h2", baselineHost, nil, []string{"old: the scenario changed since it was recorded"}},
		{"old", key, "h1", Host{CPU: baselineHost.CPU, Cores: 2, QEMU: "8.2.1", Accel: "tcg"}, nil,
			[]string{"old: host class differs: QEMU 7.2.22 vs 8.2.1"}},
		{"", "5678", "h2", baselineHost, nil, []string{
			"old: recorded for kernel key 1234abcd5678, this kernel is 5678; the scenario changed since it was recorded",
			"mid: recorded for kernel key 1234abcd5678, this kernel is 5678; the scenario changed since it was recorded",
			"other: recorded for kernel key ffff0000ffff, this kernel is 5678; the scenario changed since it was recorded"}},
		{"gone", key, "h1", baselineHost, nil, []string{`no baseline named "gone"`}},
	} {
		got, reasons := FindBaseline(list, c.name, c.key, c.hash, c.host)
		if got != c.want || !reflect.DeepEqual(reasons, c.reasons) {
			name := "<nil>"
			if got != nil {
				name = got.Name
			}
			t.Errorf("FindBaseline(%q, %q, %q) = %s, %q; want %v, %q", c.name, c.key, c.hash, name, reasons, c.want != nil, c.reasons)
		}
	}
	if _, reasons := FindBaseline(nil, "", key, "h1", baselineHost); len(reasons) != 1 {
		t.Errorf("no baselines: reasons %q", reasons)
	}
}

// TestLoadBaselinesErrors: a missing folder is empty, a bad file is named
// (with the line of a syntax error), temp files are not read.
func TestLoadBaselinesErrors(t *testing.T) {
	list, err := LoadBaselines(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(list) != 0 {
		t.Errorf("missing folder: %v, %v", list, err)
	}
	dir := t.TempDir()
	if _, err := SaveBaseline(dir, baselineExample("good", time.Now())); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ".good.json.tmp-123"), []byte("{"), 0o644)
	if list, err := LoadBaselines(dir); err != nil || len(list) != 1 {
		t.Fatalf("good folder: %d baselines, %v", len(list), err)
	}
	for _, c := range []struct {
		file, content, want string
	}{
		{"syntax.json", "{\n  \"name\": \"syntax\",\n  \"kernel\": {,\n}", "syntax.json:3: bad baseline"},
		{"type.json", "{\n  \"name\": \"type\",\n  \"repeat\": \"ten\"\n}", "type.json:3: bad baseline"},
		{"renamed.json", `{"name": "other", "kernel": {"key": "k"}, "scenario_hash": "h", "samples": [{"metric": "m"}]}`, `renamed.json: bad baseline: its name is "other"`},
		{"empty.json", `{"name": "empty", "kernel": {"key": "k"}, "scenario_hash": "h"}`, "empty.json: bad baseline: no samples"},
		{"nokey.json", `{"name": "nokey", "samples": [{"metric": "m"}]}`, "nokey.json: bad baseline: no kernel key"},
		{"unknown.json", `{"name": "unknown", "colour": "red"}`, `unknown.json: bad baseline: json: unknown field "colour"`},
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, c.file), []byte(c.content), 0o644)
		_, err := LoadBaselines(d)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(d, c.want)) {
			t.Errorf("%s: error %v, want it to contain %q", c.file, err, c.want)
		}
	}
	os.Mkdir(filepath.Join(dir, "dir.json"), 0o755)
	if _, err := LoadBaselines(dir); err == nil || !strings.Contains(err.Error(), "dir.json is not a regular file") {
		t.Errorf("a folder named .json: %v", err)
	}
}

func TestRemoveBaseline(t *testing.T) {
	dir := t.TempDir()
	if _, err := SaveBaseline(dir, baselineExample("a@b", time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := RemoveBaseline(dir, "a@b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a@b.json")); !os.IsNotExist(err) {
		t.Errorf("still there: %v", err)
	}
	if err := RemoveBaseline(dir, "a@b"); err == nil || !strings.Contains(err.Error(), `no baseline named "a@b"`) {
		t.Errorf("removing a missing baseline: %v", err)
	}
	if err := RemoveBaseline(dir, "../a"); err == nil || !strings.Contains(err.Error(), "bad baseline name") {
		t.Errorf("removing ../a: %v", err)
	}
	if _, err := SaveBaseline(dir, baselineExample("../a", time.Now())); err == nil {
		t.Error("saved a baseline named ../a")
	}
}
