package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"napilab/results"
)

// Patterns and enums of the KCIDB I/O schema v4.3 (kcidb_io/schema/v04_03.py).
var (
	kcidbTestOrigin = regexp.MustCompile(`^[a-z0-9_]+$`)
	kcidbTestID     = regexp.MustCompile(`^[a-z0-9_]+:.*$`)
	kcidbTestPath   = regexp.MustCompile(`^[.a-zA-Z0-9_-]*$`)
	kcidbTestArch   = regexp.MustCompile(`^[a-z0-9_]*$`)
	kcidbStatuses   = []string{"FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"}
	kcidbRequired   = map[string][]string{
		"checkouts": {"id", "origin"},
		"builds":    {"checkout_id", "id", "origin"},
		"tests":     {"build_id", "id", "origin"},
	}
)

// kcidbValidate checks data against the parts of the schema the export
// uses and returns the tests by path.
func kcidbValidate(t *testing.T, b []byte) map[string]map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	for k := range doc {
		if !slices.Contains([]string{"version", "checkouts", "builds", "tests", "issues", "incidents"}, k) {
			t.Errorf("unknown top-level property %q", k)
		}
	}
	v, _ := doc["version"].(map[string]any)
	if v["major"] != 4.0 || v["minor"] != 3.0 {
		t.Errorf("version = %v, want 4.3", doc["version"])
	}
	kcidbNoNull(t, "", doc)
	ids := map[string]map[string]bool{}
	byPath := map[string]map[string]any{}
	for _, kind := range []string{"checkouts", "builds", "tests"} {
		ids[kind] = map[string]bool{}
		objs, ok := doc[kind].([]any)
		if !ok || len(objs) == 0 {
			t.Fatalf("%s: want a non-empty list, got %v", kind, doc[kind])
		}
		for _, o := range objs {
			obj := o.(map[string]any)
			for _, f := range kcidbRequired[kind] {
				if s, _ := obj[f].(string); s == "" {
					t.Errorf("%s %v: missing required %q", kind, obj["id"], f)
				}
			}
			id, _ := obj["id"].(string)
			if !kcidbTestID.MatchString(id) || !strings.HasPrefix(id, "napilab:") {
				t.Errorf("%s: bad id %q", kind, id)
			}
			if ids[kind][id] {
				t.Errorf("%s: duplicate id %q", kind, id)
			}
			ids[kind][id] = true
			if o, _ := obj["origin"].(string); !kcidbTestOrigin.MatchString(o) || o != "napilab" {
				t.Errorf("%s %s: bad origin %q", kind, id, o)
			}
			if m, ok := obj["misc"]; ok {
				if _, isObj := m.(map[string]any); !isObj {
					t.Errorf("%s %s: misc is not an object", kind, id)
				}
			}
			if ex, _ := obj["log_excerpt"].(string); utf8.RuneCountInString(ex) > kcidbExcerptMax {
				t.Errorf("%s %s: log_excerpt of %d characters", kind, id, utf8.RuneCountInString(ex))
			}
			for _, f := range []string{"start_time", "_timestamp"} {
				if s, ok := obj[f].(string); ok {
					if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
						t.Errorf("%s %s: %s: %v", kind, id, f, err)
					}
				}
			}
			switch kind {
			case "builds":
				if !ids["checkouts"][obj["checkout_id"].(string)] {
					t.Errorf("build %s: unknown checkout %v", id, obj["checkout_id"])
				}
				if a, _ := obj["architecture"].(string); !kcidbTestArch.MatchString(a) {
					t.Errorf("build %s: bad architecture %q", id, a)
				}
			case "tests":
				if !ids["builds"][obj["build_id"].(string)] {
					t.Errorf("test %s: unknown build %v", id, obj["build_id"])
				}
				path, _ := obj["path"].(string)
				if !kcidbTestPath.MatchString(path) {
					t.Errorf("test %s: bad path %q", id, path)
				}
				if s, _ := obj["status"].(string); !slices.Contains(kcidbStatuses, s) {
					t.Errorf("test %s: bad status %q", id, s)
				}
				if byPath[path] == nil { // paths name kinds of test and may repeat
					byPath[path] = obj
				}
			}
		}
	}
	return byPath
}

// kcidbNoNull fails on any null: the schema allows none.
func kcidbNoNull(t *testing.T, at string, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil:
		t.Errorf("null at %s", at)
	case map[string]any:
		for k, e := range x {
			kcidbNoNull(t, at+"."+k, e)
		}
	case []any:
		for i, e := range x {
			kcidbNoNull(t, at+"["+strconv.Itoa(i)+"]", e)
		}
	}
}

func TestKCIDBFixture(t *testing.T) {
	r, _ := reportFixture(t, ".")
	var b bytes.Buffer
	if err := WriteKCIDB(&b, r); err != nil {
		t.Fatal(err)
	}
	tests := kcidbValidate(t, b.Bytes())
	whole := tests["napilab.lkdtm-warning"]
	if whole == nil || whole["status"] != "FAIL" {
		t.Fatalf("run test: %v (paths %v)", whole, repKeys(tests))
	}
	splat := tests["napilab.lkdtm-warning.no_kernel_splat"]
	if splat == nil || splat["status"] != "FAIL" {
		t.Fatalf("no-splat test: %v", splat)
	}
	misc := splat["misc"].(map[string]any)
	if misc["bound"] != "0 splats" || !strings.HasPrefix(misc["measured"].(string), "1 splats") {
		t.Errorf("misc = %v", misc)
	}
	if ex := splat["log_excerpt"].(string); !strings.Contains(ex, "WARNING: CPU: 0 PID: 1 at drivers/misc/lkdtm/bugs.c:85") {
		t.Errorf("log_excerpt is not the splat report: %q", ex)
	}
	if !strings.Contains(b.String(), `"config_name": "stock-6.1"`) {
		t.Errorf("build config_name is not the kernel spec:\n%s", b.String())
	}
}

func TestKCIDBStatuses(t *testing.T) {
	started := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	base := func(v results.Verdict) results.Result {
		return results.Result{Scenario: "napi race", Verdict: v, Started: started, Kernel: results.Kernel{Spec: "stock-6.1", Key: "0123456789abcdef0123"},
			Figures: map[string]float64{"x": 1}}
	}
	errRun := base(results.Error)
	errRun.Reasons = []string{"qemu: exit status 1"}
	errRun.ConsoleTail = strings.Repeat("é", kcidbExcerptMax+10) // over the limit, multi-byte
	hang := base(results.Fail)
	hang.Hang = &results.Hang{Step: "s", Line: 3, Deadline: "5s", Evidence: "task:foo state:D"}
	hang.Asserts = []results.Assert{{Name: "softirqs.NET_RX grows", Kind: "grows", Passed: true, Measured: "+5", Bound: ">= 1"},
		{Name: "softirqs.NET_RX grows", Kind: "grows", Passed: false, Measured: "0", Bound: ">= 1"}}
	for _, tc := range []struct {
		name string
		r    results.Result
		want map[string]string // path -> status
	}{
		{"pass", base(results.Pass), map[string]string{"napilab.napi_race": "PASS"}},
		{"error", errRun, map[string]string{"napilab.napi_race": "ERROR", "napilab.napi_race.infrastructure": "ERROR"}},
		{"hang", hang, map[string]string{"napilab.napi_race": "FAIL", "napilab.napi_race.no_hang": "FAIL",
			"napilab.napi_race.softirqs_NET_RX_grows": "PASS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteKCIDB(&b, &tc.r); err != nil {
				t.Fatal(err)
			}
			tests := kcidbValidate(t, b.Bytes()) // ids unique even where two assertions share a name
			for path, status := range tc.want {
				if tests[path] == nil || tests[path]["status"] != status {
					t.Errorf("%s: %v, want status %s", path, tests[path], status)
				}
			}
		})
	}
}

// TestKCIDBIDs: two runs of one kernel differ in their test ids, and share
// the checkout and build.
func TestKCIDBIDs(t *testing.T) {
	r, _ := reportFixture(t, ".")
	a := kcidb(r)
	r.Started = r.Started.Add(time.Second)
	b := kcidb(r)
	if a.Builds[0].ID != b.Builds[0].ID || a.Checkouts[0].ID != b.Checkouts[0].ID {
		t.Errorf("same kernel, different build or checkout ids")
	}
	for i := range a.Tests {
		if a.Tests[i].ID == b.Tests[i].ID {
			t.Errorf("test id %s repeats across runs", a.Tests[i].ID)
		}
	}
	if !strings.HasPrefix(a.Tests[0].ID, "napilab:"+r.Kernel.Key[:16]+"-20261129T211229.") {
		t.Errorf("test id %s is not derived from the key and start time", a.Tests[0].ID)
	}
}
