package kernels

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFlavour(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		"debug":                        "debug",
		"kselftest,debug":              "debug,kselftest-net",
		"debug, kselftest-drivers/net": "debug,kselftest-drivers/net",
	} {
		f, err := ParseFlavour(in)
		if err != nil || f.String() != want {
			t.Errorf("ParseFlavour(%q) = %q, %v; want %q", in, f, err, want)
		}
	}
	for _, bad := range []string{"kasan", "debug,lockdep", "kselftest-../x"} {
		if _, err := ParseFlavour(bad); err == nil || !strings.Contains(err.Error(), "unknown flavour") {
			t.Errorf("ParseFlavour(%q) = %v, want an unknown-flavour error", bad, err)
		}
	}
}

func TestFlavouredNames(t *testing.T) {
	s := &Spec{Name: "stock-6.1", Extends: "/x/base.yaml"}
	for _, tc := range []struct {
		f    Flavour
		name string
	}{
		{Flavour{}, "stock-6.1"},
		{Flavour{Debug: true}, "stock-6.1.debug"},
		{Flavour{Selftests: []string{"net"}}, "stock-6.1.kselftest-net"},
		{Flavour{Debug: true, Selftests: []string{"net"}}, "stock-6.1.debug.kselftest-net"},
	} {
		got := s.Flavoured(tc.f)
		if got.Name != tc.name || got.Flavour().String() != tc.f.String() {
			t.Errorf("Flavoured(%v) = %s (%v), want %s", tc.f, got.Name, got.Flavour(), tc.name)
		}
		if specOf(got.Name) != "stock-6.1" {
			t.Errorf("specOf(%s) = %s", got.Name, specOf(got.Name))
		}
	}
	if d := s.WithDebug(); d.Extends != s.Extends || s.Config.Debug || d.WithDebug().Name != "stock-6.1.debug" {
		t.Errorf("WithDebug: extends %q, original debug %v, twice %s", d.Extends, s.Config.Debug, d.WithDebug().Name)
	}
}

// TestBuildDebugFake builds the debug flavour of a base and of a variant
// with the fake kbuild: its own work dir and key, the sanitizers merged and
// verified, and the variant built on the base's debug build.
func TestBuildDebugFake(t *testing.T) {
	dir, base, l := fakeKbuildLab(t)
	requireNamespace(t, dir)
	ctx := context.Background()
	opts := Options{CacheDir: l.root, Jobs: 1}
	plain, err := Build(ctx, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Build(ctx, base.WithDebug(), opts)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(l.workDir("base.debug"), "build.log"))
		t.Fatalf("debug build: %v\n%s", err, log)
	}
	if d.Key == plain.Key || !d.Info.Debug || d.Info.Spec != "base.debug" || d.Cached {
		t.Errorf("debug artifact: key %s (plain %s), debug %v, spec %s, cached %v", d.Key, plain.Key, d.Info.Debug, d.Info.Spec, d.Cached)
	}
	cfg, _ := os.ReadFile(d.Config)
	if !strings.Contains(string(cfg), "CONFIG_KASAN=y\n") || !strings.Contains(string(cfg), "CONFIG_DEBUG_KMEMLEAK=y\n") {
		t.Errorf("debug .config lacks the sanitizers:\n%s", cfg)
	}
	if again, err := Build(ctx, base.WithDebug(), opts); err != nil || !again.Cached {
		t.Errorf("second debug build: cached %v, %v", again != nil && again.Cached, err)
	}
	v := writeVariant(t, dir, "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int a = 1;\n+int a = 10;\n")
	vd, err := Build(ctx, v.WithDebug(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if vd.Info.Reuses != "base.debug" || vd.Info.Objects != 1 {
		t.Errorf("debug variant: reuses %q, %d objects; want 1 object on base.debug", vd.Info.Reuses, vd.Info.Objects)
	}
}
