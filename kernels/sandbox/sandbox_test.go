package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// requireRoot skips: the sandbox only applies when lab runs as root.
func requireRoot(t *testing.T) {
	t.Helper()
	if !Active() {
		t.Skip("the build sandbox applies only to root")
	}
}

func owner(t *testing.T, path string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid
}

// A command started as root runs as UID without network, reaches a folder
// below root's 0700 t.TempDir, writes where UID owns the folder and cannot
// write a root-owned file next to it.
func TestStartSandboxesCommand(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir() // 0700, like /root above the cache
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "own")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Own(own); err != nil {
		t.Fatal(err)
	}
	script := `id -u; id -G; grep -c : /proc/net/dev; echo $$; echo pwned >> "$0" || echo denied; echo built > "$1/out"`
	cmd := exec.Command("sh", "-c", script, victim, own)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	wait, err := Start(cmd, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	lines := strings.Split(out.String(), "\n")
	// uid, groups, one interface (lo), pid 1 of its own namespace (the
	// host's init, pid 1 outside, is not its to signal), the refused write
	if len(lines) < 5 || lines[0] != "65534" || lines[1] != "65534" || lines[2] != "1" || lines[3] != "1" ||
		!strings.Contains(out.String(), "denied") {
		t.Errorf("sandboxed output = %q, want uid and groups 65534, only lo, pid 1, the write denied", out.String())
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's\n" {
		t.Errorf("root-owned file = %q, want it untouched", data)
	}
	if got := owner(t, filepath.Join(own, "out")); got != UID {
		t.Errorf("file written by the sandbox is owned by %d, want %d", got, UID)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir) {
		t.Error("the covering mounts leaked into lab's mount namespace")
	}
}

func TestCoverFor(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{"open", 0o755}, {"open/shut", 0o700}, {"open/shut/in", 0o755}, {"shut2", 0o700}} {
		p, mode := filepath.Join(dir, d.path), d.mode
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode) // past the umask
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(dir), 0o755)
	t.Cleanup(func() { os.Chmod(filepath.Dir(dir), 0o700) })
	for _, tc := range []struct {
		name string
		dirs []string
		want []string
	}{
		{"searchable", []string{"open"}, nil},
		{"below a shut folder", []string{"open/shut/in"}, []string{"open/shut"}},
		{"the shut folder itself", []string{"open/shut"}, nil},
		{"two, outermost once", []string{"shut2/x", "open/shut/in", "open/shut/in/y"}, []string{"open/shut", "shut2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dirs, want []string
			for _, d := range tc.dirs {
				dirs = append(dirs, filepath.Join(dir, d))
			}
			for _, d := range tc.want {
				want = append(want, filepath.Join(dir, d))
			}
			if got := coverFor(dirs); !reflect.DeepEqual(got, want) {
				t.Errorf("coverFor(%q) = %q, want %q", tc.dirs, got, want)
			}
		})
	}
}

func TestOwnAndDisown(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	for _, p := range []string{"a/b", "a/c"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "a", "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := OwnDirs(dir); err != nil {
		t.Fatal(err)
	}
	if owner(t, filepath.Join(dir, "a", "b")) != UID || owner(t, file) != 0 {
		t.Errorf("OwnDirs: folder owned by %d, file by %d; want %d and 0", owner(t, filepath.Join(dir, "a", "b")), owner(t, file), UID)
	}
	if err := Own(dir); err != nil {
		t.Fatal(err)
	}
	if owner(t, file) != UID {
		t.Errorf("Own: file owned by %d, want %d", owner(t, file), UID)
	}
	if err := Disown(dir); err != nil {
		t.Fatal(err)
	}
	if owner(t, file) != 0 || owner(t, filepath.Join(dir, "a", "c")) != 0 {
		t.Error("Disown left entries owned by the sandbox's uid")
	}
}

// A process that leaves the command's process group (setsid) still dies
// with it: it is in the command's pid namespace.
func TestStartLeavesNothingRunning(t *testing.T) {
	requireRoot(t)
	cmd := exec.Command("sh", "-c", "setsid sleep 1234 & exit 0")
	wait, err := Start(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, _ := os.ReadFile(p); string(data) == "sleep\x001234\x00" {
			t.Errorf("%s outlived the sandboxed command", filepath.Dir(p))
		}
	}
}

func TestBeneathFollowsNoSymlink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(victim, filepath.Join(dir, "file"))
	os.Symlink(outside, filepath.Join(dir, "folder"))
	if _, err := ReadBeneath(dir, "file"); err == nil {
		t.Error("ReadBeneath followed a symlinked file")
	}
	if _, err := ReadBeneath(dir, "folder/victim"); err == nil {
		t.Error("ReadBeneath followed a symlinked folder")
	}
	if err := WriteBeneath(dir, "folder/victim", []byte("x"), 0o644); err == nil {
		t.Error("WriteBeneath followed a symlinked folder")
	}
	if err := WriteBeneath(dir, "file", []byte("new\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "host\n" {
		t.Errorf("WriteBeneath wrote through a symlink: %q", data)
	}
	if err := WriteBeneath(dir, "a/b/c", []byte("deep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"file": "new\n", "a/b/c": "deep\n"} {
		if data, err := ReadBeneath(dir, rel); err != nil || string(data) != want {
			t.Errorf("ReadBeneath(%s) = %q, %v; want %q", rel, data, err, want)
		}
	}
}
