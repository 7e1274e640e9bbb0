package kernels

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/sandbox"
)

// A kernel's make, run by lab as root, runs as the sandbox's uid: it cannot
// write a root-owned host file, and what it writes in the work dir is the
// sandbox's.
func TestMakeRunsSandboxed(t *testing.T) {
	if !sandbox.Active() {
		t.Skip("the build sandbox applies only to root")
	}
	id, err := exec.LookPath("id")
	if err != nil {
		t.Skip("no id")
	}
	dir, base, l := fakeKbuildLab(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VICTIM", victim)
	// A hostile make: records who it is, tries the host file, then builds.
	bin := filepath.Join(dir, "bin")
	if err := os.Rename(filepath.Join(bin, "make"), filepath.Join(bin, "make.real")); err != nil {
		t.Fatal(err)
	}
	hostile := "#!/bin/sh\nid -u > \"${3#O=}/uid\"\necho pwned >> \"$VICTIM\"\nexec make.real \"$@\"\n"
	writeFiles(t, bin, map[string]string{"make": hostile})
	os.Chmod(filepath.Join(bin, "make"), 0o755)
	os.Symlink(id, filepath.Join(bin, "id"))
	a, err := Build(context.Background(), base, Options{CacheDir: l.root, Jobs: 1})
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(l.workDir(base.Name), "build.log"))
		t.Fatalf("Build: %v\n%s", err, log)
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's\n" {
		t.Errorf("make wrote a root-owned host file: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(l.workDir(base.Name), "uid")); strings.TrimSpace(string(data)) != "65534" {
		t.Errorf("make ran as uid %q, want 65534", data)
	}
	if _, err := os.Stat(a.BzImage); err != nil {
		t.Errorf("no artifact: %v", err)
	}
}

// The selftests build runs through the package's command runner: a
// cancelled build kills make's whole process group at once, even when a
// child holds the output open.
func TestSelftestMakeKillsGroup(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"bin/unshare": "#!/bin/sh\nsleep 30 & sleep 30; wait\n"})
	os.Chmod(filepath.Join(dir, "bin", "unshare"), 0o755)
	for _, tool := range []string{"sh", "sleep"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(dir, "bin", tool))
		}
	}
	t.Setenv("PATH", filepath.Join(dir, "bin"))
	var log strings.Builder
	sb := &selftestBuild{src: dir, overlay: filepath.Join(dir, "overlay"), log: &log}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sb.make(ctx, "headers")
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("make = %v, want it killed", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled selftests make returned after %v, want at once", d)
	}
}
