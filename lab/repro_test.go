package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"napilab/results"
	"napilab/scenarios"
)

// reproFolder writes a run folder whose replay.json is rp, with the
// resolved copy of a shipped scenario. Paths are from the project root.
func reproFolder(t *testing.T, rp results.Replay) string {
	t.Helper()
	dir := t.TempDir()
	s, err := scenarios.Open("scenarios/threaded-toggle-under-load.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "scenario.yaml"), s.Source, 0o644)
	(&results.Result{Scenario: s.Name, Verdict: results.Fail}).Write(dir)
	b, _ := json.Marshal(rp)
	os.WriteFile(filepath.Join(dir, "replay.json"), b, 0o644)
	return dir
}

// execLab runs the CLI and returns its error text.
func execLab(t *testing.T, args ...string) string {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		t.Fatalf("lab %v succeeded:\n%s", args, out.String())
	}
	return err.Error()
}

// TestReproTrust: lab repro checks replay.json's fields and the cache
// before building anything, builds only specs under kernels/ or named with
// --kernel, and never rebuilds a cached kernel from changed inputs. The
// specs here have a fake or missing tarball: reaching a build fails fast.
func TestReproTrust(t *testing.T) {
	if err := os.Chdir(".."); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir("lab")
	cache, elsewhere := t.TempDir(), t.TempDir()
	evil := filepath.Join(elsewhere, "evil.yaml")
	os.WriteFile(evil, []byte("name: evil\nbase:\n  tarball: /nonexistent/linux.tar.xz\n"), 0o644)
	fake := filepath.Join(elsewhere, "fake.yaml")
	os.WriteFile(filepath.Join(elsewhere, "linux.tar.xz"), []byte("not a tarball"), 0o644)
	os.WriteFile(fake, []byte("name: fake\nbase:\n  tarball: linux.tar.xz\n"), 0o644)
	key := strings.Repeat("ab", 32)
	art := filepath.Join(cache, "kernels", "fake-"+key[:16])
	os.MkdirAll(art, 0o755)
	os.WriteFile(filepath.Join(art, "build.json"), []byte(`{"spec": "fake", "key": "`+key+`"}`), 0o644)
	os.WriteFile(filepath.Join(art, "bzImage"), []byte("x"), 0o644)
	absent := strings.Repeat("cd", 32)
	wd, _ := os.Getwd()
	up, _ := filepath.Rel(wd, evil)

	for _, tc := range []struct {
		name  string
		rp    results.Replay
		flags []string
		want  string
	}{
		{"spec outside kernels/", results.Replay{KernelSpec: evil, KernelKey: absent}, nil, "outside"},
		{"spec through ..", results.Replay{KernelSpec: "kernels/../" + up, KernelKey: absent}, nil, "outside"},
		{"explicit spec is built", results.Replay{KernelSpec: evil, KernelKey: absent}, []string{"--kernel", evil}, "/nonexistent/linux.tar.xz"},
		{"bad key", results.Replay{KernelSpec: evil, KernelKey: "../../x"}, []string{"--kernel", evil}, "bad kernel key"},
		{"bad accel", results.Replay{KernelSpec: evil, KernelKey: absent, Accel: "kvm -object evil"}, []string{"--kernel", evil}, `accel "kvm -object evil"`},
		{"cached key, changed spec", results.Replay{KernelSpec: fake, KernelKey: key}, []string{"--kernel", fake}, "no longer gives the cached kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := reproFolder(t, tc.rp)
			args := append([]string{"--cache", cache, "repro", "-o", t.TempDir(), dir}, tc.flags...)
			if got := execLab(t, args...); !strings.Contains(got, tc.want) {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
			if _, err := os.Stat(filepath.Join(cache, "src")); err == nil {
				t.Error("a kernel source was extracted")
			}
		})
	}
}
