package sandbox

import (
	"fmt"
	"napilab/internal/safefs"
	"os"
	"os/exec"
	"path/filepath"
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

// A command started as root runs as UID in a jail: no network, no /proc,
// its own pid 1, a private /tmp, the system's programs read-only, and of
// the host's folders only the mounts it was given: it writes where UID owns
// a writable mount, not into a read-only one, and does not see the rest.
func TestStartJailsCommand(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir() // 0700, like /root above the cache
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own, ro, hidden := filepath.Join(dir, "own"), filepath.Join(dir, "ro"), filepath.Join(dir, "hidden")
	for _, d := range []string{own, ro, hidden} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Own(d); err != nil {
			t.Fatal(err)
		}
	}
	hostTmp := filepath.Join(os.TempDir(), "napilab-jail-test-"+filepath.Base(dir))
	t.Cleanup(func() { os.Remove(hostTmp) })
	script := `id -u; id -G; ip -o link | wc -l; echo $$; n=$(ls -d /proc/[0-9]* | wc -l); [ "$n" -lt 5 ] && grep -q stack /proc/self/maps && echo own-proc; ` +
		`[ -z "$(ls -A /.old)" ] && ! grep -q ' /.old' /proc/self/mountinfo && echo host-gone; ` +
		`{ cat "$0" || echo pwned >> "$0"; } 2>/dev/null || echo victim-hidden; ` +
		`ls "$3" 2>/dev/null || echo other-hidden; ` +
		`{ echo x > "$2/out"; } 2>/dev/null || echo ro-denied; ` +
		`{ echo x > /usr/napilab-test; } 2>/dev/null || echo usr-denied; ` +
		`echo x > "$4" && echo tmp-ok; echo built > "$1/out"`
	cmd := exec.Command("sh", "-c", script, victim, own, ro, hidden, hostTmp)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	wait, err := Start(cmd, append(Writable(own), ReadOnly(ro)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	want := "65534\n65534\n1\n1\nown-proc\nhost-gone\nvictim-hidden\nother-hidden\nro-denied\nusr-denied\ntmp-ok\n"
	if out.String() != want {
		t.Errorf("jailed output = %q, want %q (uid and groups 65534, only lo, pid 1, "+
			"its own /proc, nothing but its mounts, read-only where asked, a private /tmp)", out.String(), want)
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's\n" {
		t.Errorf("root-owned file = %q, want it untouched", data)
	}
	if _, err := os.Stat(hostTmp); err == nil {
		t.Errorf("the jail's /tmp is the host's: %s was written", hostTmp)
	}
	if _, err := os.Stat(filepath.Join(ro, "out")); err == nil {
		t.Error("the jail wrote into a read-only mount")
	}
	if got := owner(t, filepath.Join(own, "out")); got != UID {
		t.Errorf("file written by the sandbox is owned by %d, want %d", got, UID)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir) ||
		strings.Contains(string(mounts), jailRoot) {
		t.Error("the jail's mounts leaked into lab's mount namespace")
	}
}

// A mount may show a host folder at another path (a variant's build at its
// base's paths) or as an overlay whose writes land in an upper folder.
func TestStartMountsElsewhereAndOverlay(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	src, at, lower, upper, work := filepath.Join(dir, "src"), filepath.Join(dir, "at"), filepath.Join(dir, "lower"),
		filepath.Join(dir, "upper"), filepath.Join(dir, "work")
	for _, d := range []string{src, lower, upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(src, "f"), []byte("variant\n"), 0o644)
	os.WriteFile(filepath.Join(lower, "g"), []byte("pristine\n"), 0o644)
	for _, d := range []string{upper, work} {
		if err := Own(d); err != nil {
			t.Fatal(err)
		}
	}
	os.Chown(lower, UID, GID) // the merged folder is the upper's; writes need it owned
	cmd := exec.Command("sh", "-c", `cat "$0/f"; cat "$1/g"; echo new > "$1/new"`, at, lower)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	wait, err := Start(cmd, []Mount{{At: at, From: src}, {At: lower, Upper: upper, Work: work}})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if out.String() != "variant\npristine\n" {
		t.Errorf("output = %q", out.String())
	}
	if _, err := os.Stat(filepath.Join(lower, "new")); err == nil {
		t.Error("the overlay wrote into its lower folder")
	}
	if data, _ := os.ReadFile(filepath.Join(upper, "new")); string(data) != "new\n" {
		t.Errorf("upper/new = %q, want the overlay's write", data)
	}
	if _, err := os.Stat(at); err == nil {
		t.Errorf("the mount point %s was made on the host", at)
	}
}

func TestCheckMounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mounts []Mount
		ok     bool
	}{
		{"plain", Writable("/cache/work/a", "/cache/ccache/a"), true},
		{"relative", Writable("cache/work"), false},
		{"unclean", Writable("/cache/../etc"), false},
		{"nested", Writable("/cache", "/cache/work"), false},
		{"root", Writable("/"), false},
		{"over the system", ReadOnly("/usr/src"), false},
		{"overlay options", []Mount{{At: "/a,upperdir=/etc", Upper: "/u", Work: "/w"}}, false},
		{"overlay half", []Mount{{At: "/a", Upper: "/u"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkMounts(tc.mounts); (err == nil) != tc.ok {
				t.Errorf("checkMounts(%+v) = %v, want ok %v", tc.mounts, err, tc.ok)
			}
		})
	}
}

// Own walks by folder descriptors: a folder swapped for a symlink to a
// host folder while it walks (the sandbox's uid owns the tree and may do
// that) never gets the host folder's files chowned. The path-based walk
// lost this race within a few walks.
func TestOwnRaceWithSymlinkSwap(t *testing.T) {
	requireRoot(t)
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "ccache")
	for i := 0; i < 20; i++ {
		os.MkdirAll(filepath.Join(tree, fmt.Sprint(i)), 0o755)
		os.WriteFile(filepath.Join(tree, fmt.Sprint(i), "secret"), nil, 0o644)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the sandbox's side: folders become links and back
		defer close(done)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			d := filepath.Join(tree, fmt.Sprint(n%20))
			os.Rename(d, d+".x")
			os.Symlink(outside, d)
			os.Remove(d)
			os.Rename(d+".x", d)
		}
	}()
	for i := 0; i < 300 && owner(t, secret) == 0; i++ {
		Own(tree)
		Disown(tree)
	}
	close(stop)
	<-done
	if got := owner(t, secret); got != 0 {
		t.Errorf("a file outside the tree was chowned to %d through a swapped folder", got)
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
	// A file of its own (a stub's target) is given by itself.
	if err := Own(file); err != nil || owner(t, file) != UID {
		t.Errorf("Own(a file) = %v, owner %d; want it given to %d", err, owner(t, file), UID)
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
	if _, err := safefs.ReadBeneath(dir, "file"); err == nil {
		t.Error("ReadBeneath followed a symlinked file")
	}
	if _, err := safefs.ReadBeneath(dir, "folder/victim"); err == nil {
		t.Error("ReadBeneath followed a symlinked folder")
	}
	if err := safefs.WriteBeneath(dir, "folder/victim", []byte("x"), 0o644); err == nil {
		t.Error("WriteBeneath followed a symlinked folder")
	}
	if err := safefs.WriteBeneath(dir, "file", []byte("new\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "host\n" {
		t.Errorf("WriteBeneath wrote through a symlink: %q", data)
	}
	if err := safefs.WriteBeneath(dir, "a/b/c", []byte("deep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"file": "new\n", "a/b/c": "deep\n"} {
		if data, err := safefs.ReadBeneath(dir, rel); err != nil || string(data) != want {
			t.Errorf("safefs.ReadBeneath(%s) = %q, %v; want %q", rel, data, err, want)
		}
	}
}

// No fd lab inherited without close-on-exec reaches the jail (a folder fd
// would lead out of the jail: fchdir), and of lab's environment only
// what a build needs does (a CI token stays out of the build's log).
func TestStartPassesNoFdOrSecret(t *testing.T) {
	requireRoot(t)
	fd, err := syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY, 0) // no O_CLOEXEC, as inherited
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	t.Setenv("NAPILAB_TEST_TOKEN", "secret")
	t.Setenv("CCACHE_DIR", "/ccache")
	script := fmt.Sprintf(`if (: <&%d) 2>/dev/null; then echo fd-open; else echo fd-closed; fi; `+
		`echo "token=${NAPILAB_TEST_TOKEN:-none} ccache=$CCACHE_DIR home=$HOME"`, fd)
	cmd := exec.Command("sh", "-c", script)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	wait, err := Start(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if want := "fd-closed\ntoken=none ccache=/ccache home=/nonexistent\n"; out.String() != want {
		t.Errorf("jailed output = %q, want %q", out.String(), want)
	}
}
