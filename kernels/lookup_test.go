package kernels

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyedArtifact publishes an artifact dir holding only build.json and a bzImage.
func keyedArtifact(t *testing.T, root, name, key string) string {
	t.Helper()
	dir := filepath.Join(root, "kernels", name+"-"+key[:16])
	writeFiles(t, dir, map[string]string{buildInfoFile: `{"spec": "` + name + `", "key": "` + key + `"}`, bzImageFile: "x"})
	return dir
}

func TestFindKey(t *testing.T) {
	root := t.TempDir()
	key := strings.Repeat("ab", 32)
	dir := keyedArtifact(t, root, "stock-6.1", key)
	keyedArtifact(t, root, "other", key[:16]+strings.Repeat("0", 48)) // same prefix, another kernel
	a, err := FindKey(root, key)
	if err != nil || a == nil || a.Dir != dir {
		t.Fatalf("FindKey = %+v, %v; want %s", a, err, dir)
	}
	if a, err := FindKey(root, strings.Repeat("cd", 32)); a != nil || err != nil {
		t.Errorf("absent key: %+v, %v", a, err)
	}
	if a, err := FindKey(t.TempDir(), key); a != nil || err != nil {
		t.Errorf("empty cache: %+v, %v", a, err)
	}
	for _, bad := range []string{"", "../../etc/passwd", key[:63], strings.ToUpper(key)} {
		if _, err := FindKey(root, bad); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
}

// TestCacheOnly: under CacheOnly a spec whose inputs are not cached is
// refused with ErrNotCached and nothing is extracted or built.
func TestCacheOnly(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	writeFiles(t, dir, map[string]string{"linux.tar.xz": "not a tarball", "x.yaml": "name: x\nbase:\n  tarball: linux.tar.xz\n"})
	spec, err := LoadSpec(filepath.Join(dir, "x.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), spec, Options{CacheDir: root, CacheOnly: true})
	if !errors.Is(err, ErrNotCached) {
		t.Fatalf("Build = %v, want ErrNotCached", err)
	}
	for _, d := range []string{"src", "work", "kernels"} {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			t.Errorf("CacheOnly created %s", d)
		}
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	bz := filepath.Join(dir, bzImageFile)
	os.WriteFile(filepath.Join(dir, configFile), []byte("CONFIG_HZ_1000=y\nCONFIG_HZ=1000\n# CONFIG_PVH is not set\n"), 0o644)
	c, err := ReadConfig(bz)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sym, want string
	}{
		{"set", "CONFIG_HZ", "1000"},
		{"written as not set", "CONFIG_PVH", "n"},
		{"absent", "CONFIG_KASAN", "n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Value(tc.sym); got != tc.want {
				t.Errorf("Value(%s) = %q, want %q", tc.sym, got, tc.want)
			}
		})
	}
	t.Run("no config beside the image", func(t *testing.T) {
		c, err := ReadConfig(filepath.Join(t.TempDir(), bzImageFile))
		if err == nil {
			t.Error("no error for a missing config")
		}
		if got := c.Value("CONFIG_HZ"); got != "n" {
			t.Errorf("Value of an unread config = %q, want n", got)
		}
	})
}
