package kernels

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// workFiles are a crafted work dir's build outputs, where make writes them.
func workFiles() map[string]string {
	return map[string]string{"arch/x86/boot/bzImage": "MZ kernel", "include/config/kernel.release": "6.1.0-work\n",
		"modules.builtin": "kernel/drivers/net/veth.ko\n", "modules.builtin.modinfo": "veth.file=veth\x00",
		"vmlinux": "\x7fELF kernel"}
}

// publishWork publishes a crafted work dir holding files for spec through
// the builder's real publish, and indexes it as Build would.
func publishWork(t *testing.T, spec *Spec, l layout, files map[string]string) (*Artifact, error) {
	t.Helper()
	b, err := newBuilder(context.Background(), spec, Options{CacheDir: l.root, CacheOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	writeFiles(t, work, files)
	final := []byte("CONFIG_A=y\n")
	key := b.in.key(final)
	a, err := b.publish(filepath.Join(l.kernelsDir(), spec.Name+"-"+key[:16]), key, work, final, 1)
	if err != nil {
		return nil, err
	}
	if err := writeIndex(l, b.in.hash(), a); err != nil {
		t.Fatal(err)
	}
	return a, nil
}

// TestPublishRefusesBadRelease: the release leaves the sandboxed build in
// include/config/kernel.release (a patch can set it) and becomes a path.
func TestPublishRefusesBadRelease(t *testing.T) {
	for name, release := range map[string]string{
		"climbs out":     "../../../../../../../../etc/cron.d\n",
		"absolute":       "/etc/cron.d\n",
		"dot-dot":        "..\n",
		"an option":      "-a\n",
		"two lines":      "6.1.0\nevil\n",
		"over 64 bytes":  strings.Repeat("6", 65) + "\n",
		"control bytes":  "6.1.0\x1b[2J\n",
		"empty":          "\n",
		"space inside":   "6.1.0 evil\n",
		"nul terminated": "6.1.0\x00\n",
	} {
		t.Run(name, func(t *testing.T) {
			spec, l := fakeLab(t)
			files := workFiles()
			files["include/config/kernel.release"] = release
			a, err := publishWork(t, spec, l, files)
			if err == nil || !strings.Contains(err.Error(), "bad kernel release") {
				t.Fatalf("publish = %+v, %v; want a bad kernel release refused", a, err)
			}
			if ents, _ := os.ReadDir(l.kernelsDir()); len(ents) != 0 {
				t.Errorf("a refused build left kernels/%s", ents[0].Name())
			}
		})
	}
}

// TestBuildRehashesBootedFiles: q35 boots vmlinux, the Debian image takes
// the modules lists and release; a file swapped after publish must make
// Build rebuild, naming the file, not hand it to a boot.
func TestBuildRehashesBootedFiles(t *testing.T) {
	for _, name := range []string{VmlinuxFile, BuiltinFile, ReleaseFile, configFile} {
		t.Run(name, func(t *testing.T) {
			spec, l := fakeLab(t)
			a, err := publishWork(t, spec, l, workFiles())
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			progress := func(p Progress) { lines = append(lines, p.Line) }
			got, err := Build(context.Background(), spec, Options{CacheDir: l.root, Progress: progress})
			if err != nil || !got.Cached {
				t.Fatalf("intact artifact: Build = %+v, %v; want a cache hit", got, err)
			}
			path := filepath.Join(a.Dir, name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data[0] ^= 0x20 // same size, other bytes
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			lines = nil
			_, err = Build(context.Background(), spec, Options{CacheDir: l.root, Progress: progress})
			var mt *MissingToolError
			if !errors.As(err, &mt) {
				t.Fatalf("swapped %s: Build = %v, want a rebuild (which needs make)", name, err)
			}
			if !strings.Contains(strings.Join(lines, "\n"), path) {
				t.Errorf("progress %q does not name the swapped %s", lines, path)
			}
		})
	}
}
