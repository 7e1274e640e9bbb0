package kernels

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("NAPILAB_CACHE", "/x/cache")
	if got := DefaultCacheDir(); got != "/x/cache" {
		t.Errorf("DefaultCacheDir = %q, want /x/cache", got)
	}
	t.Setenv("NAPILAB_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/x/xdg")
	if got := DefaultCacheDir(); got != "/x/xdg/napilab" {
		t.Errorf("DefaultCacheDir = %q, want /x/xdg/napilab", got)
	}
}

func TestPristineDir(t *testing.T) {
	l := layout{"/c"}
	got := l.pristineDir("/usr/src/linux-source-6.1.tar.xz", "cacdc3830989ffff")
	if want := "/c/src/linux-source-6.1-cacdc3830989"; got != want {
		t.Errorf("pristineDir = %q, want %q", got, want)
	}
}

func TestTarballSumMemo(t *testing.T) {
	l := layout{t.TempDir()}
	tarball := filepath.Join(t.TempDir(), "src.tar.xz")
	writeFiles(t, filepath.Dir(tarball), map[string]string{"src.tar.xz": "one"})
	sum1, err := tarballSum(l, tarball)
	if err != nil {
		t.Fatal(err)
	}
	if want := sumString("one"); sum1 != want {
		t.Errorf("sum = %s, want %s", sum1, want)
	}
	// A stamp that matches path, size and mtime is trusted without rehashing.
	stamps, _ := filepath.Glob(filepath.Join(l.stampsDir(), "tarball-*.json"))
	if len(stamps) != 1 {
		t.Fatalf("stamps = %q, want one", stamps)
	}
	fi, _ := os.Stat(tarball)
	writeFiles(t, filepath.Dir(tarball), map[string]string{"src.tar.xz": "two"})
	if err := os.Chtimes(tarball, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if sum, _ := tarballSum(l, tarball); sum != sum1 {
		t.Errorf("same size+mtime: sum = %s, want memoised %s", sum, sum1)
	}
	later := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(tarball, later, later); err != nil {
		t.Fatal(err)
	}
	if sum, _ := tarballSum(l, tarball); sum != sumString("two") {
		t.Errorf("new mtime: sum = %s, want rehashed %s", sum, sumString("two"))
	}
}

// fakeLab writes a spec, a fragment and a fake tarball, and puts a fake gcc
// (and nothing else) on PATH, so any attempt to really build fails fast.
func fakeLab(t *testing.T) (*Spec, layout) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"k.yaml":     "name: fake\nbase:\n  tarball: src.tar.xz\n  package: linux-source-x\nconfig:\n  fragments: [a.config]\n",
		"a.config":   "CONFIG_A=y\n",
		"src.tar.xz": "not really a tarball",
		"bin/gcc":    "#!/bin/sh\necho 'gcc (Fake) 1.0'\n",
	})
	if err := os.Chmod(filepath.Join(dir, "bin/gcc"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Join(dir, "bin"))
	spec, err := LoadSpec(filepath.Join(dir, "k.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return spec, layout{filepath.Join(dir, "cache")}
}

// publishFake publishes a fake artifact for spec's inputs and indexes it.
func publishFake(t *testing.T, spec *Spec, l layout) *Artifact {
	t.Helper()
	in, err := resolveInputs(context.Background(), l, spec)
	if err != nil {
		t.Fatal(err)
	}
	key := in.key([]byte("CONFIG_A=y\n"))
	dir := filepath.Join(l.kernelsDir(), spec.Name+"-"+key[:16])
	writeFiles(t, dir, map[string]string{bzImageFile: "MZ", configFile: "CONFIG_A=y\n"})
	info := BuildInfo{Spec: spec.Name, Key: key, Compiler: in.compiler}
	recordFiles(t, dir, &info)
	if err := writeJSON(filepath.Join(dir, buildInfoFile), info); err != nil {
		t.Fatal(err)
	}
	a := newArtifact(dir, info)
	if err := writeIndex(l, in.hash(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// recordFiles sets info.Files to the artifact files in dir, as publish does.
func recordFiles(t testing.TB, dir string, info *BuildInfo) {
	t.Helper()
	info.Files = map[string]FileSum{}
	for _, name := range artifactFiles {
		sum, size, err := fileSumSize(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		info.Files[name] = FileSum{Size: size, SHA256: sum}
	}
}

func TestBuildFastPath(t *testing.T) {
	spec, l := fakeLab(t)
	want := publishFake(t, spec, l)
	var phases []string
	start := time.Now()
	a, err := Build(context.Background(), spec, Options{CacheDir: l.root,
		Progress: func(p Progress) { phases = append(phases, p.Phase) }})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cache hit took %v, want < 1s", d)
	}
	if !a.Cached || a.Dir != want.Dir || a.Key != want.Key || a.BzImage != filepath.Join(want.Dir, "bzImage") {
		t.Errorf("Build = %+v, want cached %+v", a, want)
	}
	if strings.Join(phases, ",") != PhaseDone {
		t.Errorf("phases = %q, want just done", phases)
	}
	if _, err := os.Stat(l.lockFile()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cache hit touched the lock: %v", err)
	}
}

func TestBuildMissFallsThrough(t *testing.T) {
	spec, l := fakeLab(t)
	publishFake(t, spec, l)
	// Another fragment content means other inputs: no hit, so Build wants make.
	writeFiles(t, filepath.Dir(spec.Path), map[string]string{"a.config": "CONFIG_A=m\n"})
	_, err := Build(context.Background(), spec, Options{CacheDir: l.root})
	var mt *MissingToolError
	if !errors.As(err, &mt) || mt.Tool != "make" {
		t.Fatalf("Build = %v, want a *MissingToolError for make", err)
	}
	if !strings.Contains(err.Error(), `required tool "flex" not found in PATH: install it with: apt-get install flex`) {
		t.Errorf("error %q does not name flex", err)
	}
}

func TestBuildMissingTarball(t *testing.T) {
	spec, l := fakeLab(t)
	os.Remove(spec.Base.Tarball)
	_, err := Build(context.Background(), spec, Options{CacheDir: l.root})
	var mt *MissingTarballError
	if !errors.As(err, &mt) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Build = %v, want *MissingTarballError", err)
	}
	want := "kernel source tarball " + spec.Base.Tarball + " not found: install it with: apt-get install linux-source-x"
	if err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestLookupIndexIncomplete(t *testing.T) {
	spec, l := fakeLab(t)
	a := publishFake(t, spec, l)
	in, err := resolveInputs(context.Background(), l, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lookupIndex(l, in.hash()); !ok {
		t.Fatal("lookupIndex missed a published artifact")
	}
	os.Remove(filepath.Join(a.Dir, buildInfoFile))
	if _, ok := lookupIndex(l, in.hash()); ok {
		t.Error("lookupIndex hit an artifact without build.json")
	}
	if _, ok := lookupIndex(l, strings.Repeat("0", 64)); ok {
		t.Error("lookupIndex hit an unknown hash")
	}
}

func TestArtifactRelease(t *testing.T) {
	a := &Artifact{Dir: t.TempDir()}
	if got := a.Release(); got != "" {
		t.Errorf("release of an artifact without %s = %q, want empty", ReleaseFile, got)
	}
	if err := os.WriteFile(filepath.Join(a.Dir, ReleaseFile), []byte("6.12.117\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := a.Release(); got != "6.12.117" {
		t.Errorf("release = %q, want 6.12.117", got)
	}
}
