package kernels

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// craftedKey is the key of the artifact in a hand-made archive.
var craftedKey = sumString("crafted")

// craftedDir is its dir name.
var craftedDir = "crafted-" + craftedKey[:16]

// goodFiles are a crafted artifact's files, as a build publishes them.
func goodFiles() map[string]string {
	return map[string]string{bzImageFile: "MZ kernel", configFile: "CONFIG_A=y\n", ReleaseFile: "6.1.0-crafted\n",
		BuiltinFile: "kernel/drivers/net/veth.ko\n", BuiltinModinfoFile: "veth.file=veth\x00", VmlinuxFile: "\x7fELF kernel"}
}

// craftBuildJSON is a build.json for files whose "files" record says
// record (files itself when nil), written as a plain JSON object.
func craftBuildJSON(t testing.TB, files, record map[string]string) []byte {
	t.Helper()
	if record == nil {
		record = files
	}
	sums := map[string]any{}
	for name, data := range record {
		sums[name] = map[string]any{"size": len(data), "sha256": sumString(data)}
	}
	data, err := json.Marshal(map[string]any{"spec": "crafted", "key": craftedKey, "bzimage_size": len(files[bzImageFile]),
		"bzimage_sha256": sumString(files[bzImageFile]), "files": sums})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// craftEntries is a hand-made archive of one artifact holding files, its
// build.json recording record (files when nil): the manifest, then each file.
func craftEntries(t testing.TB, files, record map[string]string) []tarEntry {
	t.Helper()
	all := map[string][]byte{buildInfoFile: craftBuildJSON(t, files, record)}
	for name, data := range files {
		all[name] = []byte(data)
	}
	k := packedKernel{Dir: craftedDir, Spec: "crafted", Key: craftedKey, InputHash: sumString("inputs")}
	var names []string
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		k.Files = append(k.Files, packedFile{Name: name, Size: int64(len(all[name])), SHA256: sumBytes(all[name])})
	}
	m, err := json.Marshal(packManifest{Format: packFormat, Kernels: []packedKernel{k}})
	if err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(0, 0)
	es := []tarEntry{{*packHeader(packManifestName, int64(len(m)), mtime), m}}
	for _, name := range names {
		es = append(es, tarEntry{*packHeader(craftedDir+"/"+name, int64(len(all[name])), mtime), all[name]})
	}
	return es
}

// checkRefused checks that Unpack into root failed saying want and left
// nothing in the cache or beside it.
func checkRefused(t *testing.T, root string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Unpack = %v, want an error saying %q", err, want)
	}
	if !strings.HasPrefix(err.Error(), "refusing kernel archive: ") {
		t.Errorf("error %q does not say the archive was refused", err)
	}
	for _, dir := range []string{"kernels", "index"} {
		if ents, _ := os.ReadDir(filepath.Join(root, dir)); len(ents) != 0 {
			t.Errorf("a refused archive left %s/%s", dir, ents[0].Name())
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(root)); len(ents) != 1 {
		t.Errorf("a refused archive wrote beside the cache: %d entries in %s", len(ents), filepath.Dir(root))
	}
}

func TestUnpackCraftedArchive(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cache")
	arts, err := Unpack(context.Background(), bytes.NewReader(writeEntries(t, craftEntries(t, goodFiles(), nil))), nil, Options{CacheDir: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 1 || arts[0].Release() != "6.1.0-crafted" {
		t.Fatalf("Unpack = %+v, want the crafted kernel", arts)
	}
}

// TestUnpackChecksBootedFiles: every file the lab boots or puts into an
// image must be what the archive's build.json records, and the release a
// release; the manifest alone proves nothing (whoever wrote the archive
// wrote it too).
func TestUnpackChecksBootedFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  func(map[string]string)
		record func(map[string]string)
		// lies makes build.json record goodFiles (with record applied), not files.
		lies bool
		want string
	}{
		{name: "release climbing out of lib/modules", want: "bad kernel release",
			files: func(f map[string]string) { f[ReleaseFile] = "../../../../../../../../etc/cron.d\n" }},
		{name: "release with a slash", want: "bad kernel release",
			files: func(f map[string]string) { f[ReleaseFile] = "6.1/../../x\n" }},
		{name: "release of two lines", want: "bad kernel release",
			files: func(f map[string]string) { f[ReleaseFile] = "6.1.0\n6.2.0\n" }},
		{name: "vmlinux not the recorded one", want: "vmlinux", lies: true,
			files: func(f map[string]string) { f[VmlinuxFile] = "\x7fELF evil!!" }},
		{name: "modules.builtin not the recorded one", want: BuiltinFile, lies: true,
			files: func(f map[string]string) { f[BuiltinFile] = "kernel/evil.ko\n" }},
		{name: "vmlinux the build did not record", want: "vmlinux", lies: true,
			record: func(f map[string]string) { delete(f, VmlinuxFile) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := goodFiles()
			if tc.files != nil {
				tc.files(files)
			}
			var record map[string]string // nil: build.json records files as they are
			if tc.lies {
				record = goodFiles()
				if tc.record != nil {
					tc.record(record)
				}
			}
			root := filepath.Join(t.TempDir(), "cache")
			_, err := Unpack(context.Background(), bytes.NewReader(writeEntries(t, craftEntries(t, files, record))), nil, Options{CacheDir: root})
			checkRefused(t, root, err, tc.want)
			if _, err := os.Lstat(filepath.Join(root, "kernels", craftedDir)); err == nil {
				t.Error("the refused kernel was installed")
			}
		})
	}
}

func TestUnpackRefusesEntryTypes(t *testing.T) {
	name := craftedDir + "/" + configFile
	for _, tc := range []struct {
		name   string
		tamper func(es []tarEntry) []tarEntry
		want   string
	}{
		{"hard link", func(es []tarEntry) []tarEntry {
			return replaceEntry(es, configFile, tarEntry{tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: "/etc/shadow"}, nil})
		}, "is a hard link"},
		{"char device", func(es []tarEntry) []tarEntry {
			return replaceEntry(es, configFile, tarEntry{tar.Header{Typeflag: tar.TypeChar, Name: name, Devmajor: 1, Devminor: 3, Mode: 0o666}, nil})
		}, "is a device"},
		{"block device", func(es []tarEntry) []tarEntry {
			return replaceEntry(es, configFile, tarEntry{tar.Header{Typeflag: tar.TypeBlock, Name: name, Devmajor: 8, Mode: 0o666}, nil})
		}, "is a device"},
		{"fifo", func(es []tarEntry) []tarEntry {
			return replaceEntry(es, configFile, tarEntry{tar.Header{Typeflag: tar.TypeFifo, Name: name, Mode: 0o666}, nil})
		}, "is a fifo"},
		{"directory", func(es []tarEntry) []tarEntry {
			return replaceEntry(es, configFile, tarEntry{tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755}, nil})
		}, "is a directory"},
		{"name twice", func(es []tarEntry) []tarEntry {
			i := slices.IndexFunc(es, func(e tarEntry) bool { return e.hdr.Name == name })
			return append(es, es[i])
		}, "comes twice"},
		{"extended attribute", func(es []tarEntry) []tarEntry {
			i := slices.IndexFunc(es, func(e tarEntry) bool { return e.hdr.Name == name })
			es[i].hdr.PAXRecords = map[string]string{"SCHILY.xattr.security.capability": "x"}
			return es
		}, "PAX records SCHILY.xattr.security.capability"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "cache")
			archive := writeEntries(t, tc.tamper(craftEntries(t, goodFiles(), nil)))
			_, err := Unpack(context.Background(), bytes.NewReader(archive), nil, Options{CacheDir: root})
			checkRefused(t, root, err, tc.want)
		})
	}
}

// replaceEntry puts e in the place of the entry for the artifact file name.
func replaceEntry(es []tarEntry, name string, e tarEntry) []tarEntry {
	i := slices.IndexFunc(es, func(e tarEntry) bool { return e.hdr.Name == craftedDir+"/"+name })
	es[i] = e
	return es
}

// TestReadPackRefusesSparse reads archives whose 256 MiB bzImage is stored
// sparse in a few KiB (testdata/sparse/make.sh): Go's reader presents the
// PAX ones as regular files of the expanded size. Nothing of that size
// may be written: what readPack leaves in its dir is bounded by the archive.
func TestReadPackRefusesSparse(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"pax-0.0.tar", "GNU.sparse.map"},
		{"pax-0.1.tar", "GNU.sparse.map"},
		{"pax-1.0.tar", "GNU.sparse.major"},
		{"gnu.tar", "want a regular file"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "sparse", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			// Same length, so the tar stays whole: the manifest in the current format.
			raw = bytes.Replace(raw, []byte(`"napilab-kernels-1"`), []byte(`"`+packFormat+`"`), 1)
			tmp := t.TempDir()
			_, err = readPack(bytes.NewReader(raw), tmp)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("readPack = %v, want an error saying %q", err, tc.want)
			}
			if n := treeSize(t, tmp); n > int64(len(raw)) {
				t.Errorf("a %d-byte archive wrote %d bytes", len(raw), n)
			}
		})
	}
}

// treeSize sums the sizes of the regular files under dir.
func treeSize(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
