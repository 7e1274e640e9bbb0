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

	"napilab/internal/sandbox"
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
	hostile := "#!/bin/sh\nid -u > \"${3#O=}/uid\"\necho pwned >> \"$VICTIM\"\nexec make.real \"$@\"\n"
	hostileMake(t, bin, hostile)
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
	writeFiles(t, dir, map[string]string{"bin/make": "#!/bin/sh\nsleep 30 & sleep 30; wait\n"})
	os.Chmod(filepath.Join(dir, "bin", "make"), 0o755)
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

// What a sandboxed make leaves in the work dir is not followed by lab (as
// root): a bzImage symlinked to a host secret is not published, and a
// build.log symlinked to a host file is replaced, not written through.
func TestBuildFollowsNoPlantedSymlink(t *testing.T) {
	if !sandbox.Active() {
		t.Skip("the build sandbox applies only to root")
	}
	dir, base, l := fakeKbuildLab(t)
	victim := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(victim, []byte("host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VICTIM", victim)
	bin := filepath.Join(dir, "bin")
	hostile := `#!/bin/sh
work=${3#O=}; eval target=\${$#}
make.real "$@" || exit $?
if [ "$target" = bzImage ]; then
	ln -sfn "$VICTIM" "$work/arch/x86/boot/bzImage"
	ln -sfn "$VICTIM" "$work/build.log"
fi
`
	hostileMake(t, bin, hostile)
	opts := Options{CacheDir: l.root, Jobs: 1}
	for i := 0; i < 2; i++ {
		a, err := Build(context.Background(), base, opts)
		if err == nil {
			data, _ := os.ReadFile(a.BzImage)
			t.Fatalf("build %d published a bzImage through a planted symlink: %q", i+1, data)
		}
		if !strings.Contains(err.Error(), "bzImage") {
			t.Errorf("build %d: error %q does not name the bzImage", i+1, err)
		}
	}
	if data, _ := os.ReadFile(victim); string(data) != "host secret\n" {
		t.Errorf("lab wrote through a planted build.log symlink: the host file holds %q", data)
	}
}

// The sandboxed selftests make reaches the folders it owns inside lab's
// scratch folder (a 0700 scratch folder stopped every selftests build).
func TestSelftestTempReachable(t *testing.T) {
	if !sandbox.Active() {
		t.Skip("the build sandbox applies only to root")
	}
	parent := t.TempDir()
	tmp, err := selftestTemp(parent)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "build")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.Own(out); err != nil {
		t.Fatal(err)
	}
	if _, err := run(context.Background(), command{argv: []string{"touch", filepath.Join(out, "x")}, dir: "/", jail: sandbox.Writable(out)}, nil); err != nil {
		t.Fatalf("the sandboxed build cannot reach %s: %v", out, err)
	}
}

// One spec's build cannot touch another's: a hostile make of spec "evil"
// (same cache, same sandbox uid) finds neither the base's work dir nor its
// ccache, and the base's next build is what it built before.
func TestBuildJailHidesOtherSpecs(t *testing.T) {
	if !sandbox.Active() {
		t.Skip("the build sandbox applies only to root")
	}
	dir, base, l := fakeKbuildLab(t)
	if _, err := Build(context.Background(), base, Options{CacheDir: l.root, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	baseObj := filepath.Join(l.workDir(base.Name), "a.o")
	os.MkdirAll(l.ccacheDir(base.Name), 0o755)
	sandbox.Own(l.ccacheDir(base.Name))
	t.Setenv("BASE_OBJ", baseObj)
	t.Setenv("BASE_CCACHE", l.ccacheDir(base.Name))
	bin := filepath.Join(dir, "bin")
	hostile := "#!/bin/sh\necho 'int a = 666;' > \"$BASE_OBJ\" 2>/dev/null\ntouch \"$BASE_CCACHE/poison\" 2>/dev/null\nexec make.real \"$@\"\n"
	hostileMake(t, bin, hostile)
	writeFiles(t, dir, map[string]string{"evil.yaml": "name: evil\nbase:\n  tarball: src.tar.xz\nconfig:\n  fragments: [a.config]\n"})
	evil, err := LoadSpec(filepath.Join(dir, "evil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), evil, Options{CacheDir: l.root, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(baseObj); string(data) != "int a = 1;\n" {
		t.Errorf("spec evil's make rewrote the base's object: %q", data)
	}
	if _, err := os.Stat(filepath.Join(l.ccacheDir(base.Name), "poison")); err == nil {
		t.Error("spec evil's make wrote into the base's ccache")
	}
}

// What one patch series' build leaves in its spec's work dir does not
// reach the build of another series under the same name: a hostile make
// that plants a newer object is followed by a clean build of the next
// series, whose kernel must not hold the planted object.
func TestBuildOtherSeriesStartsClean(t *testing.T) {
	if !sandbox.Active() {
		t.Skip("the build sandbox applies only to root")
	}
	dir, _, l := fakeKbuildLab(t)
	bin := filepath.Join(dir, "bin")
	hostile := `#!/bin/sh
work=${3#O=}; eval target=\${$#}
make.real "$@" || exit $?
if [ "$target" = bzImage ] && @PLANT@; then echo "int b = 666;" > "$work/b.o"; fi
`
	build := func(diff string) string {
		t.Helper()
		writeFiles(t, dir, map[string]string{"solo.patch": diff,
			"solo.yaml": "name: solo\nbase:\n  tarball: src.tar.xz\nconfig:\n  fragments: [a.config]\npatches: [solo.patch]\n"})
		spec, err := LoadSpec(filepath.Join(dir, "solo.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		a, err := Build(context.Background(), spec, Options{CacheDir: l.root, Jobs: 1})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(a.BzImage)
		return string(data)
	}
	hostileMake(t, bin, strings.Replace(hostile, "@PLANT@", "true", 1))
	build("--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a = 1;\n+int a = 11;\n")
	hostileMake(t, bin, strings.Replace(hostile, "@PLANT@", "false", 1))
	if got := build("--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a = 1;\n+int a = 12;\n"); strings.Contains(got, "666") {
		t.Errorf("the second series' kernel holds the object the first series planted: %q", got)
	}
}

// hostileMake puts script in front of the fake make: it becomes make, the
// fake make.real (moved once).
func hostileMake(t *testing.T, bin, script string) {
	t.Helper()
	real := filepath.Join(bin, "make.real")
	if _, err := os.Lstat(real); err != nil {
		if err := os.Rename(filepath.Join(bin, "make"), real); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, bin, map[string]string{"make": script})
	if err := os.Chmod(filepath.Join(bin, "make"), 0o755); err != nil {
		t.Fatal(err)
	}
}
