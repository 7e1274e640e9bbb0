package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

var testLimits = Limits{Bytes: 1 << 20, Entries: 100, Depth: 8}

// installTree writes a tree as a sandboxed make install leaves it: its
// uid's, writable, a set-id file, a link.
func installTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "install")
	for name, mode := range map[string]os.FileMode{"net/veth.sh": 0o775, "net/settings": 0o666, "net/forwarding/lib.sh": 0o644, "run_kselftest.sh": 0o755} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	os.Chmod(filepath.Join(dir, "net", "veth.sh"), 0o4775|os.ModeSetuid)
	if err := os.Symlink("../forwarding/lib.sh", filepath.Join(dir, "net", "lib.sh")); err != nil {
		t.Fatal(err)
	}
	if Active() {
		if err := Own(dir); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSeal(t *testing.T) {
	dir := installTree(t)
	got, err := Seal(dir, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got {
		names = append(names, e.Type+":"+e.Name)
	}
	want := []string{"dir:.", "dir:net", "dir:net/forwarding", "file:net/forwarding/lib.sh", "link:net/lib.sh",
		"file:net/settings", "file:net/veth.sh", "file:run_kselftest.sh"}
	if !slices.Equal(names, want) {
		t.Fatalf("Seal listed %q, want %q", names, want)
	}
	sum := sha256.Sum256([]byte("net/veth.sh\n"))
	if e := got[6]; e.Size != 12 || e.SHA256 != hex.EncodeToString(sum[:]) || e.Mode != 0o555 {
		t.Errorf("veth.sh = %+v, want 12 bytes, its hash, mode 0555 (no set-id, no write bit)", e)
	}
	if e := got[4]; e.Target != "../forwarding/lib.sh" {
		t.Errorf("link = %+v, want its target", e)
	}
	for _, e := range got {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, e.Name), &st); err != nil {
			t.Fatal(err)
		}
		if int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid() {
			t.Errorf("%s is owned by %d:%d after Seal", e.Name, st.Uid, st.Gid)
		}
		writable := uint32(0o7222)
		if e.Type == "dir" && !Active() {
			writable = 0o7022 // its owner removes it
		}
		if e.Type != "link" && st.Mode&writable != 0 {
			t.Errorf("%s has mode %o after Seal, want no write or set-id bit", e.Name, st.Mode&0o7777)
		}
	}
	again, err := Manifest(dir, testLimits)
	if err != nil || !slices.Equal(again, got) {
		t.Errorf("Manifest = %+v, %v; want what Seal listed", again, err)
	}
	os.Chmod(filepath.Join(dir, "net", "settings"), 0o644)
	if err := os.WriteFile(filepath.Join(dir, "net", "settings"), []byte("timeout=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, "net", "settings"), 0o444)
	if again, _ := Manifest(dir, testLimits); slices.Equal(again, got) {
		t.Error("Manifest did not see a changed file")
	}
}

func TestSealRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir string)
		lim   Limits
		want  string
	}{
		{"FIFO", func(t *testing.T, dir string) { unix.Mkfifo(filepath.Join(dir, "net", "fifo"), 0o644) }, testLimits, "not a file, folder or link"},
		{"hard link", func(t *testing.T, dir string) {
			os.Link(filepath.Join(dir, "net", "settings"), filepath.Join(dir, "net", "settings2"))
		}, testLimits, "another hard link"},
		{"too many bytes", func(*testing.T, string) {}, Limits{Bytes: 40, Entries: 100, Depth: 8}, "over 40 bytes"},
		{"too many entries", func(*testing.T, string) {}, Limits{Bytes: 1 << 20, Entries: 5, Depth: 8}, "over 5 entries"},
		{"too deep", func(*testing.T, string) {}, Limits{Bytes: 1 << 20, Entries: 100, Depth: 1}, "over 1 deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := installTree(t)
			tc.plant(t, dir)
			if _, err := Seal(dir, tc.lim); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Seal = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestManifestRefusesUnsealed(t *testing.T) {
	if !Active() {
		t.Skip("needs root: the tree must be another uid's")
	}
	dir := installTree(t)
	if _, err := Manifest(dir, testLimits); err == nil || !strings.Contains(err.Error(), "not sealed") {
		t.Errorf("Manifest of a tree the sandbox owns = %v, want refused", err)
	}
}
