package kernels

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRelease(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
		ok               bool
	}{
		{"make kernelrelease", "6.1.0\n", "6.1.0", true},
		{"localversion and dirty tree", "6.12.0-rc3-napi+\n", "6.12.0-rc3-napi+", true},
		{"no newline", "6.1.0", "6.1.0", true},
		{"64 bytes", strings.Repeat("a", 64), strings.Repeat("a", 64), true},
		{"65 bytes", strings.Repeat("a", 65), "", false},
		{"dot", ".", "", false},
		{"dot-dot", "..\n", "", false},
		{"hidden", ".6.1\n", "", false},
		{"slash", "6.1/x\n", "", false},
		{"traversal", "../../../../etc/cron.d\n", "", false},
		{"option", "--help\n", "", false},
		{"two newlines", "6.1.0\n\n", "", false},
		{"carriage return", "6.1.0\r\n", "", false},
		{"empty", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRelease([]byte(tc.data))
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseRelease(%q) = %q, %v; want %q (ok %v)", tc.data, got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestPublishRecordsEveryFile(t *testing.T) {
	spec, l := fakeLab(t)
	a, err := publishWork(t, spec, l, workFiles())
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := loadArtifact(a.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Info.Files) != len(artifactFiles) {
		t.Errorf("build.json records %v, want all of %q", loaded.Info.Files, artifactFiles)
	}
	for _, name := range artifactFiles {
		sum, size, err := fileSumSize(filepath.Join(a.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := loaded.Info.Files[name]; got != (FileSum{Size: size, SHA256: sum}) {
			t.Errorf("build.json records %s as %+v, want %d bytes %.12s", name, got, size, sum)
		}
	}
	if err := loaded.checkSum(); err != nil {
		t.Error(err)
	}
	if loaded.Release() != "6.1.0-work" {
		t.Errorf("release %q, want 6.1.0-work", loaded.Release())
	}
}

func TestPublishWithoutOptionalFiles(t *testing.T) {
	spec, l := fakeLab(t)
	a, err := publishWork(t, spec, l, map[string]string{"arch/x86/boot/bzImage": "MZ"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Info.Files) != 2 {
		t.Errorf("build.json records %v, want bzImage and config", a.Info.Files)
	}
	if err := a.checkSum(); err != nil {
		t.Error(err)
	}
}

// TestLoadArtifactRefuses: what loadArtifact sees without hashing.
func TestLoadArtifactRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"vmlinux added after publish", func(t *testing.T, dir string) {
			editRecord(t, dir, func(info *BuildInfo) { delete(info.Files, VmlinuxFile) })
			writeFiles(t, dir, map[string]string{VmlinuxFile: "\x7fELF other"})
		}, "vmlinux is not in its build record"},
		{"vmlinux a symlink", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, VmlinuxFile))
			os.Symlink("/etc/passwd", filepath.Join(dir, VmlinuxFile))
		}, "want a regular file"},
		{"vmlinux truncated", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, VmlinuxFile), 1)
		}, "1 bytes, build record says"},
		{"unknown file recorded", func(t *testing.T, dir string) {
			editRecord(t, dir, func(info *BuildInfo) { info.Files["../x"] = info.Files[configFile] })
		}, `unknown file "../x"`},
		{"config not recorded", func(t *testing.T, dir string) {
			editRecord(t, dir, func(info *BuildInfo) { delete(info.Files, configFile) })
		}, "records no config"},
		{"release replaced", func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{ReleaseFile: "../../../x\n"})
		}, "bad kernel release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, l := fakeLab(t)
			a, err := publishWork(t, spec, l, workFiles())
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, a.Dir)
			_, err = loadArtifact(a.Dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("loadArtifact = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// editRecord rewrites an artifact's build.json with edit applied.
func editRecord(t *testing.T, dir string, edit func(*BuildInfo)) {
	t.Helper()
	a, err := loadArtifact(dir)
	if err != nil {
		t.Fatal(err)
	}
	edit(&a.Info)
	if err := writeJSON(filepath.Join(dir, buildInfoFile), a.Info); err != nil {
		t.Fatal(err)
	}
}

// TestOldBuildRecord: a cache written before build.json recorded every
// file still loads (lookups, GC, lab repro's key check), but no kernel of
// it is reused: Build rebuilds it, saying why, and unpack refuses it.
func TestOldBuildRecord(t *testing.T) {
	spec, l := fakeLab(t)
	a, err := publishWork(t, spec, l, workFiles())
	if err != nil {
		t.Fatal(err)
	}
	editRecord(t, a.Dir, func(info *BuildInfo) { info.Files = nil })
	if _, err := loadArtifact(a.Dir); err != nil {
		t.Fatalf("an old record no longer loads: %v", err)
	}
	if got, err := FindKey(l.root, a.Key); err != nil || got == nil {
		t.Errorf("FindKey = %v, %v; want the old artifact", got, err)
	}
	var lines []string
	_, err = Build(context.Background(), spec, Options{CacheDir: l.root, Progress: func(p Progress) { lines = append(lines, p.Line) }})
	var mt *MissingToolError
	if !errors.As(err, &mt) {
		t.Fatalf("Build = %v, want a rebuild (which needs make)", err)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "written by an older lab") {
		t.Errorf("progress %q does not say why it rebuilds", lines)
	}
	_, err = Pack(context.Background(), &bytes.Buffer{}, []*Spec{spec}, Options{CacheDir: l.root})
	if !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "older lab") {
		t.Errorf("Pack = %v, want ErrNotCached saying the record is old", err)
	}

	root := filepath.Join(t.TempDir(), "cache")
	es := craftEntries(t, goodFiles(), nil)
	i := len(es) - 1
	for j, e := range es {
		if strings.HasSuffix(e.hdr.Name, "/"+buildInfoFile) {
			i = j
		}
	}
	es[i].data = []byte(`{"spec": "crafted", "key": "` + craftedKey + `"}`)
	es[i].hdr.Size = int64(len(es[i].data))
	editEntriesManifest(t, es, i)
	_, err = Unpack(context.Background(), bytes.NewReader(writeEntries(t, es)), nil, Options{CacheDir: root})
	checkRefused(t, root, err, "written by an older lab")
}

// editEntriesManifest makes the manifest agree with entry i's new content.
func editEntriesManifest(t *testing.T, es []tarEntry, i int) {
	t.Helper()
	editManifest(t, es, func(m *packManifest) {
		for j := range m.Kernels[0].Files {
			if f := &m.Kernels[0].Files[j]; m.Kernels[0].Dir+"/"+f.Name == es[i].hdr.Name {
				f.Size, f.SHA256 = int64(len(es[i].data)), sumBytes(es[i].data)
			}
		}
	})
}

func TestUnpackRoom(t *testing.T) {
	archive := writeEntries(t, craftEntries(t, goodFiles(), nil))
	t.Run("over the total limit", func(t *testing.T) {
		old := maxPackedTotal
		maxPackedTotal = 100
		defer func() { maxPackedTotal = old }()
		root := filepath.Join(t.TempDir(), "cache")
		_, err := Unpack(context.Background(), bytes.NewReader(archive), nil, Options{CacheDir: root})
		checkRefused(t, root, err, "over the 100 bytes limit")
	})
	t.Run("not enough free space", func(t *testing.T) {
		old := freeSpace
		var asked string
		freeSpace = func(dir string) (uint64, error) { asked = dir; return 10, nil }
		defer func() { freeSpace = old }()
		tmp := t.TempDir()
		_, err := readPack(bytes.NewReader(archive), tmp)
		if err == nil || !strings.Contains(err.Error(), "which has 10 bytes free") || !strings.Contains(err.Error(), "it needs") {
			t.Fatalf("readPack = %v, want the space needed and free named", err)
		}
		if asked != tmp {
			t.Errorf("free space asked of %q, want the cache's %q", asked, tmp)
		}
		if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
			t.Errorf("wrote %s before checking the space", ents[0].Name())
		}
	})
}
