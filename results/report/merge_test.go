package report

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"napilab/results"
)

func TestMergeShards(t *testing.T) {
	root := t.TempDir()
	mk := func(shard, name string, v results.Verdict, at time.Time) {
		dir := filepath.Join(root, shard, name)
		os.MkdirAll(dir, 0o755)
		r := &results.Result{Scenario: name, Kernel: results.Kernel{Spec: "stock-6.1"}, Verdict: v, Started: at,
			Asserts: []results.Assert{{Name: "no kernel splat", Passed: v == results.Pass, Measured: "0 splats", Bound: "0 splats"}}}
		if err := Save(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	mk("shard-1", "a", results.Pass, now.Add(time.Minute))
	mk("shard-2", "b", results.Fail, now)
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

// TestMergeRefusesLinks: a symlink in a shard (to a file the merger may
// read and the shard's author may not) is refused, never copied, and a
// FIFO does not block the merge.
func TestMergeRefusesLinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("SECRET"), 0o600)
	for _, tc := range []struct {
		name  string
		plant func(run string) error
		want  string
	}{
		{"linked file", func(run string) error { return os.Symlink(secret, filepath.Join(run, "console.log")) }, "symbolic link"},
		{"linked result", func(run string) error {
			os.Remove(filepath.Join(run, "result.json"))
			return os.Symlink(secret, filepath.Join(run, "result.json"))
		}, "symbolic link"},
		{"fifo", func(run string) error { return syscall.Mkfifo(filepath.Join(run, "console.log"), 0o644) }, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			run := filepath.Join(root, "shard", "a")
			os.MkdirAll(run, 0o755)
			r := &results.Result{Scenario: "a", Verdict: results.Pass, Started: time.Now()}
			if err := r.Write(run); err != nil {
				t.Fatal(err)
			}
			if err := tc.plant(run); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(root, "merged")
			done := make(chan error, 1)
			go func() { _, err := Merge([]string{filepath.Join(root, "shard")}, out); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("merge blocked")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
			b, _ := os.ReadFile(filepath.Join(out, "a", "console.log"))
			if strings.Contains(string(b), "SECRET") {
				t.Error("the link's target was copied")
			}
		})
	}
}
