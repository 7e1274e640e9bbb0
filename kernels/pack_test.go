package kernels

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// publishPackable publishes a fake artifact for spec's inputs with a full
// build record (tarball and bzImage sha256s), as a build does.
func publishPackable(t *testing.T, spec *Spec, l layout, image string) *Artifact {
	t.Helper()
	in, err := resolveInputs(context.Background(), l, spec)
	if err != nil {
		t.Fatal(err)
	}
	config := "CONFIG_A=y\n# " + spec.Name + "\n"
	key := in.key([]byte(config))
	dir := filepath.Join(l.kernelsDir(), spec.Name+"-"+key[:16])
	writeFiles(t, dir, map[string]string{bzImageFile: image, configFile: config, ReleaseFile: "6.1.0-fake\n",
		VmlinuxFile: "ELF " + image})
	info := BuildInfo{Spec: spec.Name, Key: key, BaseSHA256: in.tarSum, Compiler: in.compiler,
		BzImageSize: int64(len(image)), BzImageSHA256: sumString(image), Debug: spec.Config.Debug}
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

// packFixture packs a spec's plain and debug kernels.
func packFixture(t *testing.T) (spec *Spec, archive []byte) {
	t.Helper()
	spec, l := fakeLab(t)
	publishPackable(t, spec, l, "MZ plain")
	publishPackable(t, spec.WithDebug(), l, "MZ debug")
	var buf bytes.Buffer
	if _, err := Pack(context.Background(), &buf, []*Spec{spec, spec.WithDebug()}, Options{CacheDir: l.root}); err != nil {
		t.Fatal(err)
	}
	return spec, buf.Bytes()
}

func TestPackUnpackRoundTrip(t *testing.T) {
	spec, archive := packFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		specs []*Spec
	}{
		{"checked against the spec", []*Spec{spec}},
		{"trusting the archive", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			arts, err := Unpack(ctx, bytes.NewReader(archive), tc.specs, Options{CacheDir: root})
			if err != nil {
				t.Fatal(err)
			}
			if len(arts) != 2 || arts[0].Cached || arts[1].Cached {
				t.Fatalf("Unpack = %+v, want two fresh kernels", arts)
			}
			for _, s := range []*Spec{spec, spec.WithDebug()} {
				a, err := Build(ctx, s, Options{CacheDir: root, CacheOnly: true})
				if err != nil {
					t.Fatalf("Build(%s) after unpack: %v", s.Name, err)
				}
				want := map[bool]string{false: "MZ plain", true: "MZ debug"}[s.Config.Debug]
				if data, _ := os.ReadFile(a.BzImage); string(data) != want || !a.Cached {
					t.Errorf("%s: cached %v, bzImage %q, want %q", s.Name, a.Cached, data, want)
				}
				if a.Release() != "6.1.0-fake" {
					t.Errorf("%s: release %q, want the packed kernel.release", s.Name, a.Release())
				}
			}
			again, err := Unpack(ctx, bytes.NewReader(archive), tc.specs, Options{CacheDir: root})
			if err != nil || !again[0].Cached || !again[1].Cached {
				t.Errorf("second Unpack = %+v, %v; want both already cached", again, err)
			}
			if left, _ := filepath.Glob(filepath.Join(root, "kernels", ".tmp-*")); len(left) != 0 {
				t.Errorf("temp dirs left: %q", left)
			}
		})
	}
}

func TestPackNotBuilt(t *testing.T) {
	spec, l := fakeLab(t)
	_, err := Pack(context.Background(), io.Discard, []*Spec{spec}, Options{CacheDir: l.root})
	if !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "kernel fake") {
		t.Errorf("Pack of an unbuilt spec = %v, want ErrNotCached naming it", err)
	}
}

// tarEntry is one entry of an archive being tampered with.
type tarEntry struct {
	hdr  tar.Header
	data []byte
}

// readEntries splits an archive into its entries.
func readEntries(t *testing.T, archive []byte) []tarEntry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	var out []tarEntry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{*hdr, data})
	}
}

// writeEntries joins entries into an archive.
func writeEntries(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := e.hdr
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// find returns the index of the entry whose name ends in suffix.
func find(t *testing.T, entries []tarEntry, suffix string) int {
	t.Helper()
	for i, e := range entries {
		if strings.HasSuffix(e.hdr.Name, suffix) {
			return i
		}
	}
	t.Fatalf("no entry *%s", suffix)
	return -1
}

// editManifest rewrites the manifest entry (the first) with edit applied.
func editManifest(t *testing.T, entries []tarEntry, edit func(*packManifest)) {
	t.Helper()
	var m packManifest
	if err := json.Unmarshal(entries[0].data, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	entries[0].data, entries[0].hdr.Size = data, int64(len(data))
}

func TestUnpackRefusesTamperedArchives(t *testing.T) {
	spec, archive := packFixture(t)
	other := filepath.Join(filepath.Dir(spec.Path), "other.yaml")
	writeFiles(t, filepath.Dir(spec.Path), map[string]string{
		"other.yaml": "name: fake\nbase:\n  tarball: src.tar.xz\nconfig:\n  fragments: [b.config]\n",
		"b.config":   "CONFIG_B=y\n",
	})
	otherSpec, err := LoadSpec(other)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		tamper func(t *testing.T, es []tarEntry) []tarEntry
		specs  []*Spec
		limit  int64
		want   string
	}{
		{name: "changed byte", want: "sha256", tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			i := find(t, es, "/"+bzImageFile)
			es[i].data = bytes.Clone(es[i].data)
			es[i].data[0] ^= 1
			return es
		}},
		{name: "extra entry", want: `entry "evil" is not in the manifest`, tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			return append(es, tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: "evil", Size: 1, Mode: 0o644}, []byte("x")})
		}},
		{name: "dot-dot path", want: `entry "../evil": not a plain relative path`, tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			return append(es, tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: "../evil", Size: 1, Mode: 0o644}, []byte("x")})
		}},
		{name: "absolute path", want: `entry "/tmp/evil": not a plain relative path`, tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			return append(es, tarEntry{tar.Header{Typeflag: tar.TypeReg, Name: "/tmp/evil", Size: 1, Mode: 0o644}, []byte("x")})
		}},
		{name: "symlink", want: "is a symlink, want a regular file", tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			i := find(t, es, "/"+configFile)
			es[i] = tarEntry{tar.Header{Typeflag: tar.TypeSymlink, Name: es[i].hdr.Name, Linkname: "/etc/shadow", Mode: 0o777}, nil}
			return es
		}},
		{name: "oversize file", limit: 4, want: "over the 4-byte limit", tamper: func(t *testing.T, es []tarEntry) []tarEntry { return es }},
		{name: "size not the manifest's", want: "the manifest says", tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			i := find(t, es, "/"+bzImageFile)
			es[i].data = append(bytes.Clone(es[i].data), "more"...)
			es[i].hdr.Size = int64(len(es[i].data))
			return es
		}},
		{name: "missing file", want: "archive lacks", tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			i := find(t, es, "/"+configFile)
			return append(es[:i:i], es[i+1:]...)
		}},
		{name: "manifest not first", want: "not a kernel archive", tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			return append(es[1:], es[0])
		}},
		{name: "manifest escapes", want: `dir "../x"`, tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			editManifest(t, es, func(m *packManifest) { m.Kernels[0].Dir = "../x" })
			return es
		}},
		{name: "bzImage swapped, manifest too", want: "bzImage: build.json says sha256", tamper: func(t *testing.T, es []tarEntry) []tarEntry {
			i := find(t, es, "/"+bzImageFile)
			es[i].data = []byte("MZ evil!")
			es[i].hdr.Size = int64(len(es[i].data))
			editManifest(t, es, func(m *packManifest) {
				for j := range m.Kernels[0].Files {
					if f := &m.Kernels[0].Files[j]; f.Name == bzImageFile {
						f.Size, f.SHA256 = int64(len(es[i].data)), sumString("MZ evil!")
					}
				}
			})
			return es
		}},
		{name: "other inputs on this machine", specs: []*Spec{otherSpec}, want: "does not match " + other + " on this machine",
			tamper: func(t *testing.T, es []tarEntry) []tarEntry { return es }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.limit > 0 {
				old := maxPackedFile
				maxPackedFile = tc.limit
				defer func() { maxPackedFile = old }()
			}
			bad := writeEntries(t, tc.tamper(t, readEntries(t, archive)))
			root := t.TempDir()
			_, err := Unpack(context.Background(), bytes.NewReader(bad), tc.specs, Options{CacheDir: root})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Unpack = %v, want an error saying %q", err, tc.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
			if !strings.HasPrefix(err.Error(), "refusing kernel archive: ") {
				t.Errorf("error %q does not say the archive was refused", err)
			}
			for _, dir := range []string{"kernels", "index"} {
				if ents, _ := os.ReadDir(filepath.Join(root, dir)); len(ents) != 0 {
					t.Errorf("a refused archive left %s/%s", dir, ents[0].Name())
				}
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(root), "evil")); err == nil {
				t.Error("an entry was written outside the cache")
			}
		})
	}
}
