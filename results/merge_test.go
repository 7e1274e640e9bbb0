package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMergeShards(t *testing.T) {
	root := t.TempDir()
	mk := func(shard, name string, v Verdict, at time.Time) {
		dir := filepath.Join(root, shard, name)
		os.MkdirAll(dir, 0o755)
		r := &Result{Scenario: name, Kernel: Kernel{Spec: "stock-6.1"}, Verdict: v, Started: at,
			Asserts: []Assert{{Name: "no kernel splat", Passed: v == Pass, Measured: "0 splats", Bound: "0 splats"}}}
		if err := r.Write(dir); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	mk("shard-1", "a", Pass, now.Add(time.Minute))
	mk("shard-2", "b", Fail, now)
	out := filepath.Join(root, "merged")
	rs, err := Merge([]string{filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")}, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Scenario != "b" {
		t.Fatalf("merged %d runs, first %q; want 2, oldest (b) first", len(rs), rs[0].Scenario)
	}
	junit, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
	if strings.Count(string(junit), "<testsuite ") != 2 || !strings.Contains(string(junit), "<failure") {
		t.Errorf("merged junit:\n%s", junit)
	}
	for _, f := range []string{"a/result.json", "b/junit.xml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("merged folder lacks %s", f)
		}
	}
	if _, err := Merge([]string{filepath.Join(root, "shard-1"), filepath.Join(root, "shard-1")}, filepath.Join(root, "m2")); err == nil {
		t.Error("the same run twice was accepted")
	}
}
