package kernels

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testDiff is a minimal valid patch.
const testDiff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"

// writeFiles creates files (name -> content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadSpecStock(t *testing.T) {
	spec, err := LoadSpec("stock-6.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Spec{
		Name:        "stock-6.1",
		Description: "Debian linux-source-6.1, no patches, tinyconfig + the lab fragments.",
		Base:        Base{Tarball: "/usr/src/linux-source-6.1.tar.xz", Package: "linux-source-6.1"},
		Config: Config{Base: "tinyconfig", Fragments: []string{"configs/base.config",
			"configs/virtio.config", "configs/net.config", "configs/debug.config", "configs/trace.config"}},
		Path: "stock-6.1.yaml",
	}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("LoadSpec = %+v\nwant %+v", spec, want)
	}
}

func TestLoadSpecErrors(t *testing.T) {
	const good = "name: x\nbase:\n  tarball: /t.tar.xz\nconfig:\n  fragments: [a.config]\n"
	tests := []struct {
		name, spec, want string
	}{
		{"unknown field", "name: x\nbase:\n  tarball: /t.tar.xz\nconfig:\n  frgments: [a.config]\n",
			`x.yaml:5: unknown field "frgments"`},
		{"missing fragment", "name: x\nbase:\n  tarball: /t.tar.xz\nconfig:\n  fragments:\n    - a.config\n    - nope.config\n",
			`x.yaml:7: fragment "nope.config" not found`},
		{"missing patch", good + "patches: [p/1.patch]\n", `x.yaml:6: patch "p/1.patch" not found`},
		{"not a patch", good + "patches:\n  - a.config\n", `x.yaml:7: patch "a.config": ` + "DIR/a.config: no diff found"},
		{"broken quilt", good + "patches: [q]\n", `x.yaml:6: patch "q": DIR/q/series:1: patch file DIR/q/nope.patch not found`},
		{"no name", "base:\n  tarball: /t.tar.xz\n", `x.yaml: bad name ""`},
		{"bad name", "name: ../x\nbase:\n  tarball: /t.tar.xz\n", `x.yaml:1: bad name "../x"`},
		{"long name", "name: " + strings.Repeat("x", 101) + "\nbase:\n  tarball: /t.tar.xz\n", `x.yaml:1: bad name "xxx`},
		{"make target", "name: x\nbase:\n  tarball: /t.tar.xz\nconfig:\n  base: install\n", `x.yaml:5: config.base "install": want one of tinyconfig,`},
		{"make arguments", "name: x\nbase:\n  tarball: /t.tar.xz\nconfig:\n  base: tinyconfig O=/\n", `x.yaml:5: config.base "tinyconfig O=/"`},
		{"device patch", good + "patches: [/dev/zero]\n", `x.yaml:6: patch "/dev/zero" is not a file or folder`},
		{"device extends", "name: x\nextends: /dev/zero\n", `x.yaml:2: failed to load extended spec: failed to read spec: /dev/zero is not a regular file`},
		{"no base", "name: x\n", `x.yaml: base needs tarball, package and suite, tree or git`},
		{"syntax", "name: x\n  bad: [\n", `x.yaml:2: `},
		{"wrong type", "name: x\ncmdline: {a: b}\n", `x.yaml:2: cannot unmarshal`},
		{"empty", "", `x.yaml: empty spec`},
		{"cycle", "name: x\nextends: x.yaml\n", `extends cycle`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"x.yaml": tc.spec, "a.config": "CONFIG_A=y\n", "q/series": "nope.patch\n"})
			_, err := LoadSpec(filepath.Join(dir, "x.yaml"))
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			if err == nil {
				t.Fatalf("LoadSpec succeeded, want error containing %q", want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error = %q, want it to contain %q", err, want)
			}
		})
	}
}

func TestLoadSpecUnknownFieldExact(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"x.yaml": "name: x\nbase:\n  tarball: /t\nconfig:\n  frgments: []\n"})
	_, err := LoadSpec(filepath.Join(dir, "x.yaml"))
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want *SpecError", err)
	}
	if want := filepath.Join(dir, "x.yaml") + `:5: unknown field "frgments"`; se.Error() != want {
		t.Errorf("error = %q, want %q", se.Error(), want)
	}
}

func TestLoadSpecExtends(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"base/parent.yaml": "name: parent\nbase:\n  tarball: ../src.tar.xz\n  package: pkg\n" +
			"config:\n  fragments: [a.config]\ncmdline: [quiet]\npatches: [one.patch]\n",
		"base/a.config":  "CONFIG_A=y\n",
		"base/one.patch": testDiff,
		"child.yaml": "name: child\nextends: base/parent.yaml\nconfig:\n  fragments: [b.config]\ncmdline: [debug]\n" +
			"patches: [quilt]\n",
		"quilt/series":    "two.patch\n",
		"quilt/two.patch": testDiff,
		"b.config":        "CONFIG_B=y\n",
		"src.tar.xz":      "",
	})
	spec, err := LoadSpec(filepath.Join(dir, "child.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Spec{
		Name:    "child",
		Base:    Base{Tarball: filepath.Join(dir, "src.tar.xz"), Package: "pkg"},
		Config:  Config{Base: "tinyconfig", Fragments: []string{filepath.Join(dir, "base/a.config"), filepath.Join(dir, "b.config")}},
		Patches: []string{filepath.Join(dir, "base/one.patch"), filepath.Join(dir, "quilt")},
		Cmdline: []string{"quiet", "debug"},
		Extends: filepath.Join(dir, "base/parent.yaml"),
		Path:    filepath.Join(dir, "child.yaml"),
	}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("LoadSpec = %+v\nwant %+v", spec, want)
	}
}

func TestLoadSpecConfigBases(t *testing.T) {
	for _, b := range ConfigBases {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"x.yaml": "name: x\nbase:\n  tarball: /t.tar.xz\nconfig:\n  base: " + b + "\n"})
		spec, err := LoadSpec(filepath.Join(dir, "x.yaml"))
		if err != nil || spec.Config.Base != b {
			t.Errorf("config.base %s: %v", b, err)
		}
	}
}

// FuzzLoadSpec: a spec file of any content loads or fails with an error, never a crash.
func FuzzLoadSpec(f *testing.F) {
	for _, p := range []string{"stock-6.1.yaml", "threaded-napi-6.1.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: x\nextends: x.yaml\nconfig: {base: tinyconfig, fragments: [a.config]}\npatches: [p]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"x.yaml": string(b), "a.config": "CONFIG_A=y\n", "p": testDiff})
		LoadSpec(filepath.Join(dir, "x.yaml"))
	})
}

// TestLoadSpecModes: a variant inherits its parent's perf modes unless it
// names its own, which replace them; a bad name is an error at its line.
func TestLoadSpecModes(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"parent.yaml": "name: parent\nbase:\n  tarball: src.tar.xz\nmodes: [threaded, softirq]\n",
		"same.yaml":   "name: same\nextends: parent.yaml\n",
		"own.yaml":    "name: own\nextends: parent.yaml\nmodes: [busy-poll]\n",
		"bad.yaml":    "name: bad\nbase:\n  tarball: src.tar.xz\nmodes:\n  - a/b\n",
		"src.tar.xz":  "",
	})
	for file, want := range map[string][]string{"parent.yaml": {"threaded", "softirq"}, "same.yaml": {"threaded", "softirq"}, "own.yaml": {"busy-poll"}} {
		spec, err := LoadSpec(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
		} else if !reflect.DeepEqual(spec.Modes, want) {
			t.Errorf("%s: modes %v, want %v", file, spec.Modes, want)
		}
	}
	if _, err := LoadSpec(filepath.Join(dir, "bad.yaml")); err == nil || !strings.Contains(err.Error(), `bad.yaml:5: modes: "a/b"`) {
		t.Errorf("bad mode: %v", err)
	}
}
