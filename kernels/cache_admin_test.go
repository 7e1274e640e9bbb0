package kernels

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// fakeArtifact publishes an artifact dir for spec with key and an index entry aged by age.
func fakeArtifact(t *testing.T, l layout, spec, key string, age time.Duration) string {
	t.Helper()
	name := spec + "-" + key
	writeFiles(t, l.kernelsDir(), map[string]string{name + "/" + bzImageFile: "MZ" + strings.Repeat("x", 10000)})
	if err := writeJSON(filepath.Join(l.kernelsDir(), name, buildInfoFile), BuildInfo{Spec: spec, Key: key}); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(l.indexDir(), "h-"+key+".json")
	if err := writeJSON(idx, indexEntry{Artifact: name, Key: key}); err != nil {
		t.Fatal(err)
	}
	tm := time.Now().Add(-age)
	if err := os.Chtimes(idx, tm, tm); err != nil {
		t.Fatal(err)
	}
	return name
}

// gcFixture fills a cache with what GC must keep and what it must remove.
func gcFixture(t *testing.T) (specs []*Spec, l layout, current string) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir()) // GC also sweeps os.TempDir()
	base, variant, l := fakeVariantLab(t)
	a := publishFake(t, base, l) // the artifact base's current inputs map to ...
	idx, _ := filepath.Glob(filepath.Join(l.indexDir(), "*.json"))
	for _, f := range idx { // ... indexed long ago
		os.Chtimes(f, time.Now().Add(-5*time.Hour), time.Now().Add(-5*time.Hour))
	}
	fakeArtifact(t, l, "base", "1111111111111111", 3*time.Hour)
	fakeArtifact(t, l, "base", "2222222222222222", time.Hour)
	fakeArtifact(t, l, "gone", "3333333333333333", time.Minute)
	fakeArtifact(t, l, "base.kselftest-net", "5555555555555555", time.Minute) // a flavour of a spec in use
	fakeArtifact(t, l, "base.debug.kselftest-net", "6666666666666666", time.Minute)
	writeFiles(t, l.root, map[string]string{
		"work/base.kselftest-net/vmlinux":          "elf",
		"kernels/.tmp-123/bzImage":                 "half",
		"index/h-4444.json":                        `{"artifact": "base-4444444444444444", "key": "4"}`,
		"work/base/vmlinux":                        "elf",
		"work/variant/vmlinux":                     "elf",
		"work/gone/vmlinux":                        "elf",
		"ccaches/base/0/x":                         "obj",
		"ccaches/gone/0/x":                         "obj",
		"ccache/0/x":                               "obj",
		"work/.tmp-seed-1/vmlinux":                 "half",
		"src/linux-x-abcdef123456/Makefile":        "pristine",
		"src/gone-aaaaaaaaaaaa/" + patchedStamp:    "{}",
		"src/base-bbbbbbbbbbbb/" + patchedStamp:    "{}",
		"src/variant-cccccccccccc/" + patchedStamp: "{}",
		"src/.tmp-extract-1/x":                     "half",
		"src/.variant-dddddddddddd.tmp-1/x":        "half",
		"src/.napilab-check-1/x":                   "someone's running check",
	})
	return []*Spec{base, variant}, l, filepath.Base(a.Dir)
}

func TestGC(t *testing.T) {
	specs, l, current := gcFixture(t)
	in, err := resolveInputs(context.Background(), l, specs[1])
	if err != nil {
		t.Fatal(err)
	}
	variantSrc := filepath.Base(l.sourceDir(specs[1], in))
	writeFiles(t, l.srcDir(), map[string]string{variantSrc + "/" + patchedStamp: "{}"})
	want := map[string]string{
		"kernels/base-1111111111111111":   "artifact of spec base, superseded by newer builds",
		"kernels/gone-3333333333333333":   "artifact of spec gone, which no longer exists",
		"kernels/.tmp-123":                "leftover of an interrupted build",
		"index/h-1111111111111111.json":   "index entry of a removed artifact",
		"index/h-3333333333333333.json":   "index entry of a removed artifact",
		"index/h-4444.json":               "index entry of a removed artifact",
		"work/gone":                       "work dir of spec gone, which no longer exists",
		"work/.tmp-seed-1":                "leftover of an interrupted build",
		"ccaches/gone":                    "ccache of spec gone, which no longer exists",
		"ccache":                          "the ccache all specs shared (each spec has its own now)",
		"src/gone-aaaaaaaaaaaa":           "patched source of spec gone, which no longer exists",
		"src/base-bbbbbbbbbbbb":           "patched source of spec base, which has no patches now",
		"src/variant-cccccccccccc":        "patched source of an older patch series of variant",
		"src/.tmp-extract-1":              "leftover of an interrupted build",
		"src/.variant-dddddddddddd.tmp-1": "leftover of an interrupted build",
	}
	kept := []string{"kernels/" + current, "kernels/base-2222222222222222", "work/base", "work/variant", "ccaches/base",
		"kernels/base.kselftest-net-5555555555555555", "work/base.kselftest-net",
		"kernels/base.debug.kselftest-net-6666666666666666",
		"src/linux-x-abcdef123456", "src/" + variantSrc, "src/.napilab-check-1"}
	check := func(removed []Removal, freed int64) {
		t.Helper()
		got := map[string]string{}
		var sum int64
		for _, r := range removed {
			rel, _ := filepath.Rel(l.root, r.Path)
			got[rel] = r.Why
			sum += r.Bytes
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("removed:\n%v\nwant:\n%v", got, want)
		}
		if sum != freed || freed < 10000 {
			t.Errorf("freed %d, removals sum to %d", freed, sum)
		}
	}
	ctx := context.Background()
	removed, freed, err := GC(ctx, l.root, specs, GCOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	check(removed, freed)
	for rel := range want {
		if _, err := os.Stat(filepath.Join(l.root, rel)); err != nil {
			t.Errorf("dry run removed %s", rel)
		}
	}
	removed, freed, err = GC(ctx, l.root, specs, GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(removed, freed)
	for rel := range want {
		if _, err := os.Stat(filepath.Join(l.root, rel)); err == nil {
			t.Errorf("GC kept %s", rel)
		}
	}
	for _, rel := range kept {
		if _, err := os.Stat(filepath.Join(l.root, rel)); err != nil {
			t.Errorf("GC removed %s", rel)
		}
	}
	if removed, _, _ := GC(ctx, l.root, specs, GCOptions{}); len(removed) != 0 {
		t.Errorf("second GC removed %v", removed)
	}
}

func TestGCKeep(t *testing.T) {
	specs, l, current := gcFixture(t)
	if _, _, err := GC(context.Background(), l.root, specs, GCOptions{Keep: 2}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(l.kernelsDir())
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{"base-1111111111111111", "base-2222222222222222", "base.debug.kselftest-net-6666666666666666", "base.kselftest-net-5555555555555555", current}
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
}

func TestGCWaitsForTheLock(t *testing.T) {
	specs, l, _ := gcFixture(t)
	unlock, err := lockCache(context.Background(), l.lockFile())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := GC(ctx, l.root, specs, GCOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GC under a held lock = %v, want it to wait until ctx ends", err)
	}
}

func TestList(t *testing.T) {
	specs, l, current := gcFixture(t)
	missing := *specs[0]
	missing.Name, missing.Base.Tarball = "missing", "/nonexistent/linux.tar.xz"
	// The base's debug flavour is built: it gets a line of its own.
	dbg := specs[0].WithDebug()
	in, err := resolveInputs(context.Background(), l, dbg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(l.kernelsDir(), fakeArtifact(t, l, dbg.Name, "7777777777777777", time.Minute))
	if err := writeIndex(l, in.hash(), &Artifact{Dir: dir, Key: "7777777777777777"}); err != nil {
		t.Fatal(err)
	}
	entries, err := List(context.Background(), l.root, append(specs, &missing))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Fatalf("%d entries", len(entries))
	}
	if e := entries[1]; e.Spec.Name != "base.debug" || e.Artifact == nil || e.Artifact.Dir != dir {
		t.Errorf("debug flavour entry = %+v", e)
	}
	entries = append(entries[:1], entries[2:]...)
	if e := entries[0]; e.Artifact == nil || filepath.Base(e.Artifact.Dir) != current || e.Extends != "" || e.Patches != 0 {
		t.Errorf("base entry = %+v", e)
	}
	if e := entries[1]; e.Artifact != nil || e.Extends != "base" || e.Patches != 1 || e.Err != nil {
		t.Errorf("variant entry = %+v", e)
	}
	var mt *MissingTarballError
	if e := entries[2]; !errors.As(e.Err, &mt) {
		t.Errorf("missing entry = %+v", e)
	}
}
