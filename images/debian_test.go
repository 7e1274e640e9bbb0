package images

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"
)

// TestWriteTree archives a tree the way the Debian rootfs is archived:
// directories, files with modes, symlinks and hard links kept; /dev left
// with only the console.
func TestWriteTree(t *testing.T) {
	tree := t.TempDir()
	os.MkdirAll(filepath.Join(tree, "usr", "bin"), 0o755)
	os.MkdirAll(filepath.Join(tree, "dev", "pts"), 0o755)
	os.WriteFile(filepath.Join(tree, "usr", "bin", "bash"), []byte("#!bash"), 0o755)
	os.Link(filepath.Join(tree, "usr", "bin", "bash"), filepath.Join(tree, "usr", "bin", "rbash"))
	os.Symlink("usr/bin", filepath.Join(tree, "bin"))
	var buf bytes.Buffer
	n, err := writeTree(&buf, tree)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(buf.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]cpio.Record{}
	for _, r := range recs {
		names = append(names, r.Name)
		byName[r.Name] = r
	}
	want := []string{"bin", "dev", "dev/console", "dev/pts", "usr", "usr/bin", "usr/bin/bash", "usr/bin/rbash"}
	if !slices.Equal(names, want) || n != len(want) {
		t.Fatalf("entries %q (n=%d), want %q", names, n, want)
	}
	bash, rbash := byName["usr/bin/bash"], byName["usr/bin/rbash"]
	if bash.Mode&0o777 != 0o755 || bash.MTime != 0 || bash.FileSize != 6 {
		t.Errorf("bash: mode %o mtime %d size %d", bash.Mode, bash.MTime, bash.FileSize)
	}
	if rbash.Ino != bash.Ino || rbash.NLink < 2 || rbash.FileSize != 0 {
		t.Errorf("rbash should be a hard link to bash (ino %d/%d, nlink %d, size %d)", rbash.Ino, bash.Ino, rbash.NLink, rbash.FileSize)
	}
	if byName["bin"].Mode&cpio.S_IFLNK != cpio.S_IFLNK {
		t.Errorf("bin is not a symlink: %o", byName["bin"].Mode)
	}
}

func TestDebianKey(t *testing.T) {
	a := Debian{Suite: "bookworm", Mirror: "http://a", Packages: []string{"bash", "iproute2"}}
	b := Debian{Suite: "bookworm", Mirror: "http://b", Packages: []string{"iproute2", "bash", "bash"}}
	if a.key() != b.key() {
		t.Error("the key must not depend on the mirror or the package order")
	}
	c := a
	c.Packages = append(c.Packages, "ethtool")
	if a.key() == c.key() {
		t.Error("another package set must give another key")
	}
}

func TestPruneComposed(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"debian-img-a.cpio", "debian-img-b.cpio", "debian-img-c.cpio", "debian-bookworm-x.cpio"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, nil, 0o644)
		tm := time.Unix(int64(1000+i), 0)
		os.Chtimes(p, tm, tm)
	}
	pruneComposed(dir, 2)
	left, _ := filepath.Glob(filepath.Join(dir, "*.cpio"))
	var names []string
	for _, l := range left {
		names = append(names, filepath.Base(l))
	}
	if want := []string{"debian-bookworm-x.cpio", "debian-img-b.cpio", "debian-img-c.cpio"}; !slices.Equal(names, want) {
		t.Errorf("left %q, want %q (the rootfs archive is never pruned)", names, want)
	}
}

func TestHostMirror(t *testing.T) {
	dir := t.TempDir()
	deb822 := filepath.Join(dir, "debian.sources")
	os.WriteFile(deb822, []byte("Types: deb\n# http://snapshot.debian.org/archive/debian/x\nURIs: http://mirror.example/debian/\nSuites: bookworm\n\nURIs: http://mirror.example/debian-security\n"), 0o644)
	oneLine := filepath.Join(dir, "sources.list")
	os.WriteFile(oneLine, []byte("deb http://security.debian.org/debian-security bookworm-security main\ndeb http://ftp.example/debian bookworm main\n"), 0o644)
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{deb822, oneLine}, "http://mirror.example/debian"},
		{[]string{filepath.Join(dir, "none"), oneLine}, "http://ftp.example/debian"},
		{[]string{filepath.Join(dir, "none")}, "http://deb.debian.org/debian"},
	} {
		if got := hostMirror(tc.files...); got != tc.want {
			t.Errorf("hostMirror(%v) = %q, want %q", tc.files, got, tc.want)
		}
	}
}

func TestBuiltinModules(t *testing.T) {
	if _, err := exec.LookPath("depmod"); err != nil {
		t.Skip("needs depmod (kmod)")
	}
	kdir, tmp := t.TempDir(), t.TempDir()
	if dir, err := builtinModules(context.Background(), kdir, tmp); dir != "" || err != nil {
		t.Fatalf("an artifact without the files: %q, %v; want nothing", dir, err)
	}
	os.WriteFile(filepath.Join(kdir, "kernel.release"), []byte("6.1.0-test\n"), 0o644)
	os.WriteFile(filepath.Join(kdir, "modules.builtin"), []byte("kernel/drivers/net/veth.ko\n"), 0o644)
	os.WriteFile(filepath.Join(kdir, "modules.builtin.modinfo"), nil, 0o644)
	dir, err := builtinModules(context.Background(), kdir, tmp)
	if err != nil || dir != filepath.Join(tmp, "lib", "modules") {
		t.Fatalf("builtinModules = %q, %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "6.1.0-test", "modules.builtin.bin")); err != nil {
		t.Errorf("depmod did not index the built-ins: %v", err)
	}
}

// TestBuiltinModulesRefusesBadRelease: kernel.release comes from the build
// or an archive and names lib/modules/<release>, written as root; a bad one
// is refused and nothing is written outside tmp.
func TestBuiltinModulesRefusesBadRelease(t *testing.T) {
	for name, release := range map[string]string{
		"climbs out": "../../../../out\n",
		"absolute":   "/out\n",
		"dot-dot":    "..\n",
		"an option":  "-a\n",
		"two lines":  "6.1.0\n../../../../out\n",
	} {
		t.Run(name, func(t *testing.T) {
			base, kdir := t.TempDir(), t.TempDir()
			tmp := filepath.Join(base, "x", "y")
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(kdir, "kernel.release"), []byte(release), 0o644)
			os.WriteFile(filepath.Join(kdir, "modules.builtin"), []byte("kernel/drivers/net/veth.ko\n"), 0o644)
			os.WriteFile(filepath.Join(kdir, "modules.builtin.modinfo"), nil, 0o644)
			dir, err := builtinModules(context.Background(), kdir, tmp)
			if err == nil || !strings.Contains(err.Error(), "bad kernel release") {
				t.Errorf("builtinModules = %q, %v; want a bad kernel release refused", dir, err)
			}
			if ents, _ := os.ReadDir(base); len(ents) != 1 {
				t.Errorf("wrote beside tmp: %d entries in %s", len(ents), base)
			}
			if _, err := os.Stat("/out/modules.builtin"); err == nil {
				t.Error("wrote /out/modules.builtin")
			}
		})
	}
}
