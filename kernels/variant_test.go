package kernels

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeMake stands in for kbuild: tinyconfig writes .config and the source
// symlink, bzImage "compiles" each *.c newer than its .o (printing kbuild's
// CC line) and links them into vmlinux and the bzImage.
const fakeMake = `#!/bin/sh
src=$2; work=${3#O=}; eval target=\${$#}
case $target in
tinyconfig) echo "# fake" > "$work/.config"; ln -sfn "$src" "$work/source";;
olddefconfig) ;;
bzImage)
	mkdir -p "$work/arch/x86/boot"
	for f in "$src"/*.c; do
		o="$work/$(basename "$f" .c).o"
		if [ ! -e "$o" ] || [ "$f" -nt "$o" ]; then echo "  CC      $(basename "$o")"; cp "$f" "$o"; fi
	done
	cat "$work"/*.o > "$work/vmlinux"; cp "$work/vmlinux" "$work/arch/x86/boot/bzImage";;
*) echo "fake make: unknown target $target" >&2; exit 2;;
esac
`

// fakeKbuildLab writes a real source tarball, a base spec and a variant spec,
// and a PATH with the fake make and gcc next to the real tar, xz, patch and
// namespace tools.
func fakeKbuildLab(t *testing.T) (dir string, base *Spec, l layout) {
	t.Helper()
	dir = searchableTempDir(t)
	writeFiles(t, dir, map[string]string{
		"tree/linux/a.c":      "int a = 1;\n",
		"tree/linux/b.c":      "int b = 2;\n",
		"tree/linux/Makefile": "# fake\n",
		"base.yaml":           "name: base\nbase:\n  tarball: src.tar.xz\nconfig:\n  fragments: [a.config]\n",
		"a.config":            "CONFIG_A=n\n",
		"bin/make":            fakeMake,
		"bin/gcc":             "#!/bin/sh\necho 'gcc (Fake) 1.0'\n",
		"bin/flex":            "#!/bin/sh\n",
		"bin/bison":           "#!/bin/sh\n",
		"bin/bc":              "#!/bin/sh\n",
	})
	for _, tool := range []string{"make", "gcc", "flex", "bison", "bc"} {
		os.Chmod(filepath.Join(dir, "bin", tool), 0o755)
	}
	for _, tool := range []string{"sh", "cat", "cp", "ln", "mkdir", "basename", "tar", "xz", "patch", "true"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not installed", tool)
		}
		os.Symlink(p, filepath.Join(dir, "bin", tool))
	}
	if out, err := exec.Command("tar", "-cJf", filepath.Join(dir, "src.tar.xz"), "-C", filepath.Join(dir, "tree"), "linux").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	t.Setenv("PATH", filepath.Join(dir, "bin"))
	base, err := LoadSpec(filepath.Join(dir, "base.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, base, layout{filepath.Join(dir, "cache")}
}

// writeVariant writes variant.yaml extending base.yaml with the given patch (none if empty).
func writeVariant(t *testing.T, dir, diff string) *Spec {
	t.Helper()
	spec := "name: variant\nextends: base.yaml\n"
	if diff != "" {
		writeFiles(t, dir, map[string]string{"v.patch": diff})
		spec += "patches: [v.patch]\n"
	}
	writeFiles(t, dir, map[string]string{"variant.yaml": spec})
	s, err := LoadSpec(filepath.Join(dir, "variant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuildVariantFake(t *testing.T) {
	dir, base, l := fakeKbuildLab(t)
	requireNamespace(t, dir)
	ctx := context.Background()
	opts := Options{CacheDir: l.root, Jobs: 1}
	build := func(spec *Spec) *Artifact {
		t.Helper()
		a, err := Build(ctx, spec, opts)
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(l.workDir(spec.Name), "build.log"))
			t.Fatalf("Build(%s): %v\n%s", spec.Name, err, log)
		}
		return a
	}
	image := func(a *Artifact) string {
		data, _ := os.ReadFile(a.BzImage)
		return string(data)
	}

	// The variant's first Build builds the base first, then starts from it.
	v1 := writeVariant(t, dir, "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a = 1;\n+int a = 10;\n")
	a1 := build(v1)
	if a1.Info.Objects != 1 || a1.Info.Reuses != "base" || image(a1) != "int a = 10;\nint b = 2;\n" {
		t.Errorf("variant: %d objects, reuses %q, image %q; want 1 object rebuilt on base", a1.Info.Objects, a1.Info.Reuses, image(a1))
	}
	if want := []string{"patch 1 (v): applies"}; strings.Join(a1.Info.PatchResults, "|") != strings.Join(want, "|") {
		t.Errorf("PatchResults = %q, want %q", a1.Info.PatchResults, want)
	}
	b := build(base)
	if !b.Cached || b.Info.Objects != 2 || image(b) != "int a = 1;\nint b = 2;\n" {
		t.Errorf("base: cached %v, %d objects, image %q", b.Cached, b.Info.Objects, image(b))
	}
	log, _ := os.ReadFile(filepath.Join(l.workDir("variant"), "build.log"))
	if want := "$ make -C " + filepath.Join(l.srcDir(), "src-"); !strings.Contains(string(log), want) {
		t.Errorf("variant make did not run at the base's source path (%s...):\n%s", want, log)
	}

	// Another series: reseeded from the base, so the dropped change to a.c is gone too.
	v2 := writeVariant(t, dir, "--- a/b.c\n+++ b/b.c\n@@ -1 +1 @@\n-int b = 2;\n+int b = 20;\n")
	a2 := build(v2)
	if a2.Info.Objects != 1 || image(a2) != "int a = 1;\nint b = 20;\n" {
		t.Errorf("second series: %d objects, image %q", a2.Info.Objects, image(a2))
	}

	// No patches at all: nothing to compile, the base's objects as they are.
	a3 := build(writeVariant(t, dir, ""))
	if a3.Info.Objects != 0 || image(a3) != image(b) {
		t.Errorf("no patches: %d objects, image %q, want the base's", a3.Info.Objects, image(a3))
	}

	// The pristine tree and the base's work dir never saw the variants.
	pristine := filepath.Join(l.srcDir(), "src-"+b.Info.BaseSHA256[:12])
	if data, _ := os.ReadFile(filepath.Join(pristine, "a.c")); string(data) != "int a = 1;\n" {
		t.Errorf("pristine a.c = %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(l.workDir("base"), "vmlinux")); string(data) != "int a = 1;\nint b = 2;\n" {
		t.Errorf("base vmlinux = %q", data)
	}
}

func TestBuildVariantConflict(t *testing.T) {
	dir, _, l := fakeKbuildLab(t)
	requireNamespace(t, dir)
	v := writeVariant(t, dir, "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a = 5;\n+int a = 10;\n")
	_, err := Build(context.Background(), v, Options{CacheDir: l.root, Jobs: 1})
	pe, ok := err.(*PatchError)
	if !ok || pe.Spec != "variant" || len(pe.Results) != 1 {
		t.Fatalf("Build = %v, want a *PatchError", err)
	}
	if want := "patch 1 (v): conflicts: a.c hunk #1 FAILED at 1"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if matches, _ := filepath.Glob(filepath.Join(l.srcDir(), "variant-*")); len(matches) != 0 {
		t.Errorf("a half-patched source was left: %q", matches)
	}
}

func TestSource(t *testing.T) {
	dir, base, l := fakeKbuildLab(t)
	ctx := context.Background()
	opts := Options{CacheDir: l.root}
	pristine, err := Source(ctx, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	v := writeVariant(t, dir, "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a = 1;\n+int a = 10;\n")
	patched, err := Source(ctx, v, opts)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(patched) != l.srcDir() || !strings.HasPrefix(filepath.Base(patched), "variant-") {
		t.Errorf("Source(variant) = %s, want src/variant-<hash>", patched)
	}
	for tree, want := range map[string]string{pristine: "int a = 1;\n", patched: "int a = 10;\n"} {
		if data, _ := os.ReadFile(filepath.Join(tree, "a.c")); string(data) != want {
			t.Errorf("%s/a.c = %q, want %q", tree, data, want)
		}
	}
	if m, err := readMarker(patched); err != nil || strings.Join(m.Files, ",") != "a.c" {
		t.Errorf("marker = %+v, %v", m, err)
	}
	again, err := Source(ctx, v, opts)
	if err != nil || again != patched {
		t.Errorf("second Source = %s, %v; want the stamped copy reused", again, err)
	}
}
