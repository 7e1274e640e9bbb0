package kernels

import (
	"context"
	"encoding/json"
	"errors"
	"napilab/internal/sandbox"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// old is the mtime fixture files start with.
var old = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// setTimes gives every file under dir the mtime t.
func setTimes(t *testing.T, dir string, tm time.Time) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, tm, tm)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// replaceFile writes a new inode at path, the way GNU patch does.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// linkCopyTree makes dst a hardlink copy of src, like patches.Apply does.
func linkCopyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-al", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -al: %v\n%s", err, out)
	}
}

func mtime(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

func TestTouchChanged(t *testing.T) {
	dir := t.TempDir()
	pristine, variant := filepath.Join(dir, "pristine"), filepath.Join(dir, "variant")
	writeFiles(t, pristine, map[string]string{"net/a.c": "a\n", "net/b.c": "b\n", "net/c.c": "c\n", "Makefile": "m\n"})
	setTimes(t, pristine, old)
	linkCopyTree(t, pristine, variant)
	replaceFile(t, filepath.Join(variant, "net/a.c"), "a changed\n")
	replaceFile(t, filepath.Join(variant, "net/b.c"), "b\n") // patched and patched back
	writeFiles(t, variant, map[string]string{"net/new.c": "new\n"})
	setTimes(t, filepath.Join(variant, "net/b.c"), old.Add(time.Hour))
	marker := &patchedMarker{Files: []string{"net/a.c", "net/b.c", "net/c.c", "net/new.c", "net/gone.c", "net/a.c"}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	plan := &reusePlan{Source: variant, SourceAt: "/shown/at", BaseSource: pristine}
	if err := touchChanged(plan, marker, now); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want time.Time
	}{
		{"variant/net/a.c", now},   // differs from the base: rebuild
		{"variant/net/new.c", now}, // new: build
		{"variant/net/b.c", old},   // same as the base: the base's mtime back
		{"variant/net/c.c", old},   // still the pristine inode: never touched
		{"pristine/net/c.c", old},  // ... so the pristine tree keeps its mtimes
		{"pristine/net/a.c", old},  //
		{"variant/Makefile", old},  // not touched by the patches
	} {
		if got := mtime(t, filepath.Join(dir, tc.path)); !got.Equal(tc.want) {
			t.Errorf("%s: mtime %v, want %v", tc.path, got, tc.want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(pristine, "net/a.c")); string(data) != "a\n" {
		t.Errorf("pristine a.c = %q", data)
	}
}

func TestSeed(t *testing.T) {
	root := t.TempDir()
	l := layout{root}
	baseWork := l.workDir("base")
	writeFiles(t, baseWork, map[string]string{"vmlinux": "elf", "arch/x86/boot/bzImage": "MZ", "net/core/dev.o": "obj",
		".config": "CONFIG_A=y\n", reuseStamp: `{"base":"grandparent"}`})
	if err := os.Symlink("/src/base", filepath.Join(baseWork, "source")); err != nil {
		t.Fatal(err)
	}
	setTimes(t, baseWork, old)
	b := &builder{spec: &Spec{Name: "variant"}, layout: l}
	plan := &reusePlan{Base: "base", Source: "/src/variant", SourceAt: "/src/base", Work: l.workDir("variant"), WorkAt: "/shown/at",
		BaseWork: baseWork, BaseSource: "/src/base"}
	if err := b.seed(context.Background(), plan, nil); err != nil {
		t.Fatal(err)
	}
	if got := mtime(t, filepath.Join(plan.Work, "net/core/dev.o")); !got.Equal(old) {
		t.Errorf("copied object mtime %v, want the base's %v", got, old)
	}
	if link, _ := os.Readlink(filepath.Join(plan.Work, "source")); link != "/src/base" {
		t.Errorf("source symlink = %q", link)
	}
	if data, _ := os.ReadFile(filepath.Join(plan.Work, reuseStamp)); !strings.Contains(string(data), `"base": "base"`) {
		t.Errorf("stamp = %s", data)
	}
	// Same plan: the variant's own incremental state is kept.
	writeFiles(t, plan.Work, map[string]string{"variant.o": "x"})
	if err := b.seed(context.Background(), plan, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plan.Work, "variant.o")); err != nil {
		t.Errorf("same plan reseeded the work dir: %v", err)
	}
	// Another series: the copy is thrown away and seeded again.
	plan2 := *plan
	plan2.Source = "/src/variant-2"
	if err := b.seed(context.Background(), &plan2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plan.Work, "variant.o")); err == nil {
		t.Error("a new plan kept the old work dir")
	}
	// A newer build of the base: seeded again too.
	writeFiles(t, plan.Work, map[string]string{"variant.o": "x"})
	plan3 := plan2
	plan3.BaseBuild++
	if err := b.seed(context.Background(), &plan3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plan.Work, "variant.o")); err == nil {
		t.Error("a newer base build kept the old work dir")
	}
	if entries, _ := filepath.Glob(filepath.Join(root, "work", ".tmp-*")); len(entries) != 0 {
		t.Errorf("seed left %q", entries)
	}
	// Building on its own again drops the seeded dir; an own work dir stays.
	if err := dropSeed(plan.Work); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(plan.Work); err == nil {
		t.Error("dropSeed kept a seeded work dir")
	}
	own := l.workDir("own")
	writeFiles(t, own, map[string]string{"vmlinux": "elf"})
	if err := dropSeed(own); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(own, "vmlinux")); err != nil {
		t.Error("dropSeed removed a work dir that was not seeded")
	}
}

// searchableTempDir is a t.TempDir the build sandbox's uid can reach, for
// the fake tools on PATH outside the cache (t.TempDir's folders are 0700).
func searchableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// requireNamespace skips unless lab runs as root: only then does a
// variant build on its base's build (the jail shows it at the base's paths).
func requireNamespace(t *testing.T, dir string) {
	t.Helper()
	if !sandbox.Active() {
		t.Skip("a variant reuses its base's build only as root")
	}
}

// fakeVariantLab writes a base and a variant spec (extends, one patch) over
// a fake tarball, with a fake gcc and the namespace tools on PATH but no make.
func fakeVariantLab(t *testing.T) (base, variant *Spec, l layout) {
	t.Helper()
	dir := searchableTempDir(t)
	writeFiles(t, dir, map[string]string{
		"base.yaml":    "name: base\nbase:\n  tarball: src.tar.xz\nconfig:\n  fragments: [a.config]\n",
		"variant.yaml": "name: variant\nextends: base.yaml\npatches: [one.patch]\n",
		"other.yaml":   "name: other\nextends: base.yaml\nbase:\n  tarball: other.tar.xz\n",
		"a.config":     "CONFIG_A=y\n",
		"one.patch":    testDiff,
		"src.tar.xz":   "not really a tarball",
		"other.tar.xz": "another tarball",
		"bin/gcc":      "#!/bin/sh\necho 'gcc (Fake) 1.0'\n",
	})
	if err := os.Chmod(filepath.Join(dir, "bin/gcc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"sh", "unshare", "mount", "true", "cp", "patch", "tar", "xz", "bc", "flex", "bison"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(dir, "bin", tool))
		}
	}
	t.Setenv("PATH", filepath.Join(dir, "bin"))
	var err error
	if base, err = LoadSpec(filepath.Join(dir, "base.yaml")); err != nil {
		t.Fatal(err)
	}
	if variant, err = LoadSpec(filepath.Join(dir, "variant.yaml")); err != nil {
		t.Fatal(err)
	}
	return base, variant, layout{filepath.Join(dir, "cache")}
}

// fakeBaseBuild makes the base's work dir look built from its pristine source.
func fakeBaseBuild(t *testing.T, base *Spec, l layout, source string) string {
	t.Helper()
	in, err := resolveInputs(context.Background(), l, base)
	if err != nil {
		t.Fatal(err)
	}
	pristine := l.pristineDir(base.Base.Tarball, in.tarSum)
	writeFiles(t, pristine, map[string]string{"Makefile": "all:\n"})
	work := l.workDir(base.Name)
	writeFiles(t, work, map[string]string{"vmlinux": "elf", "arch/x86/boot/bzImage": "MZ"})
	if source == "" {
		source = pristine
	}
	if err := os.Symlink(source, filepath.Join(work, "source")); err != nil {
		t.Fatal(err)
	}
	return pristine
}

func TestPlanReuse(t *testing.T) {
	ctx := context.Background()
	t.Run("base built", func(t *testing.T) {
		base, variant, l := fakeVariantLab(t)
		pristine := fakeBaseBuild(t, base, l, "")
		requireNamespace(t, pristine)
		b, err := newBuilder(ctx, variant, Options{CacheDir: l.root})
		if err != nil {
			t.Fatal(err)
		}
		plan, note, err := b.planReuse(ctx)
		if err != nil || plan == nil {
			t.Fatalf("planReuse = %+v, %q, %v", plan, note, err)
		}
		want := reusePlan{Base: "base", SourceAt: pristine, Work: l.workDir("variant"), WorkAt: l.workDir("base"),
			BaseBuild: mtime(t, filepath.Join(l.workDir("base"), "vmlinux")).UnixNano(), BaseWork: l.workDir("base"), BaseSource: pristine}
		if *plan != want {
			t.Errorf("plan = %+v\nwant %+v", *plan, want)
		}
	})
	t.Run("a flavour on the base's same flavour", func(t *testing.T) {
		base, variant, l := fakeVariantLab(t)
		for _, f := range []Flavour{{Selftests: []string{"net"}}, {Debug: true}} {
			pristine := fakeBaseBuild(t, base.Flavoured(f), l, "")
			requireNamespace(t, pristine)
			b, err := newBuilder(ctx, variant.Flavoured(f), Options{CacheDir: l.root})
			if err != nil {
				t.Fatal(err)
			}
			plan, note, err := b.planReuse(ctx)
			want := base.Flavoured(f).Name
			if err != nil || plan == nil || plan.Base != want || plan.WorkAt != l.workDir(want) ||
				plan.Work != l.workDir(variant.Flavoured(f).Name) {
				t.Errorf("%s: planReuse = %+v, %q, %v; want it on %s", f, plan, note, err, want)
			}
		}
	})
	t.Run("a base that is itself a variant", func(t *testing.T) {
		base, variant, l := fakeVariantLab(t)
		// The base was built shown at its own base's paths (its stamp says
		// where): the variant is shown there too, and seeded from the base.
		shownSrc, shownWork := filepath.Join(l.root, "grand-src"), l.workDir("grand")
		pristine := fakeBaseBuild(t, base, l, shownSrc)
		requireNamespace(t, pristine)
		stamp := func(src, work string) {
			data, _ := json.Marshal(reusePlan{Base: "grand", SourceAt: src, WorkAt: work})
			writeFiles(t, l.workDir("base"), map[string]string{reuseStamp: string(data)})
		}
		stamp(shownSrc, shownWork)
		b, _ := newBuilder(ctx, variant, Options{CacheDir: l.root})
		if plan, note, _ := b.planReuse(ctx); plan != nil || !strings.Contains(note, "which is gone; full build") {
			t.Errorf("the base's base gone: planReuse = %+v, %q; want a full build", plan, note)
		}
		writeFiles(t, shownSrc, map[string]string{"Makefile": "all:\n"})
		writeFiles(t, shownWork, map[string]string{"vmlinux": "elf"})
		plan, note, err := b.planReuse(ctx)
		if err != nil || plan == nil || plan.SourceAt != shownSrc || plan.WorkAt != shownWork ||
			plan.BaseWork != l.workDir("base") || plan.BaseSource != pristine {
			t.Errorf("planReuse = %+v, %q, %v; want it shown at %s and %s, seeded from the base", plan, note, err, shownSrc, shownWork)
		}
		stamp("/another/src", shownWork)
		if plan, note, _ := b.planReuse(ctx); plan != nil || !strings.Contains(note, "was built from") {
			t.Errorf("a stamp that does not match the base's source link: planReuse = %+v, %q; want a full build", plan, note)
		}
	})
	t.Run("base built from elsewhere", func(t *testing.T) {
		base, variant, l := fakeVariantLab(t)
		fakeBaseBuild(t, base, l, "/somewhere/else")
		b, _ := newBuilder(ctx, variant, Options{CacheDir: l.root})
		plan, note, err := b.planReuse(ctx)
		if err != nil || plan != nil || !strings.Contains(note, `was built from "/somewhere/else"`) {
			t.Errorf("planReuse = %+v, %q, %v; want a full build", plan, note, err)
		}
	})
	t.Run("base not built", func(t *testing.T) {
		_, variant, l := fakeVariantLab(t)
		b, _ := newBuilder(ctx, variant, Options{CacheDir: l.root})
		_, _, err := b.planReuse(ctx)
		var mt *MissingToolError
		if !errors.As(err, &mt) || !strings.Contains(err.Error(), "failed to build base base: ") {
			t.Errorf("planReuse = %v, want it to try building the base (and miss make)", err)
		}
	})
	t.Run("other tarball", func(t *testing.T) {
		base, _, l := fakeVariantLab(t)
		other, err := LoadSpec(filepath.Join(filepath.Dir(base.Path), "other.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := newBuilder(ctx, other, Options{CacheDir: l.root})
		plan, note, err := b.planReuse(ctx)
		if err != nil || plan != nil || note != "base base builds another tarball; full build" {
			t.Errorf("planReuse = %+v, %q, %v", plan, note, err)
		}
	})
	t.Run("no extends", func(t *testing.T) {
		base, _, l := fakeVariantLab(t)
		b, _ := newBuilder(ctx, base, Options{CacheDir: l.root})
		if plan, note, err := b.planReuse(ctx); plan != nil || note != "" || err != nil {
			t.Errorf("planReuse = %+v, %q, %v", plan, note, err)
		}
	})
}
