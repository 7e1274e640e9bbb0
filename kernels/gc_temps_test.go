package kernels

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// deadPid is the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestGCRemovesTempsOfDeadOwners(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	root := t.TempDir()
	dead, live := deadPid(t), os.Getpid()
	files := map[string]string{}
	var wantGone, wantKept []string
	for _, name := range []string{
		"selftests/.tmp-pid%d-1", "images/.debootstrap-pid%d-2", "images/.tmp-pid%d-3",
		"src/.napilab-check-pid%d-4", "debs/.fetch-pid%d-8", "TMP/napilab-sock-pid%d-5", "TMP/napilab-modules-pid%d-6",
		"TMP/napilab-agent-pid%d-7",
	} {
		for _, pid := range []int{dead, live} {
			p := strings.Replace(fmt.Sprintf(name, pid), "TMP/", "", 1)
			dir := root
			if strings.HasPrefix(name, "TMP/") {
				dir = tmp
			}
			files[filepath.Join(dir, p, "x")] = "half"
			if pid == dead {
				wantGone = append(wantGone, filepath.Join(dir, p))
			} else {
				wantKept = append(wantKept, filepath.Join(dir, p))
			}
		}
	}
	// Not ours, or no owner named: kept.
	wantKept = append(wantKept, filepath.Join(tmp, fmt.Sprintf("other-pid%d-1", dead)),
		filepath.Join(root, "src", ".napilab-check-1"))
	for _, p := range wantKept[len(wantKept)-2:] {
		files[filepath.Join(p, "x")] = "other"
	}
	for p, data := range files {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, _, err := GC(context.Background(), root, nil, GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range removed {
		got = append(got, r.Path)
		if !strings.Contains(r.Why, fmt.Sprint(dead)) {
			t.Errorf("%s: reason %q does not name the dead owner", r.Path, r.Why)
		}
	}
	slices.Sort(got)
	slices.Sort(wantGone)
	if !slices.Equal(got, wantGone) {
		t.Errorf("removed\n%q\nwant\n%q", got, wantGone)
	}
	for _, p := range wantKept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: its owner lives or it is not ours", p)
		}
	}
}

func TestGCRemovesUnownedSelftestTempsOnlyWhenUnlocked(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	root := t.TempDir()
	old := filepath.Join(root, "selftests", ".tmp-123")
	os.MkdirAll(old, 0o755)
	unlock, err := lockCache(context.Background(), filepath.Join(root, "selftests", "lock"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := GC(context.Background(), root, nil, GCOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatal("removed a selftests temp dir while a build holds the lock")
	}
	unlock()
	if _, _, err := GC(context.Background(), root, nil, GCOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); err == nil {
		t.Error("kept a selftests temp dir no build holds")
	}
}

func TestTempPatternOwner(t *testing.T) {
	dir, err := os.MkdirTemp(t.TempDir(), TempPattern("napilab-x-"))
	if err != nil {
		t.Fatal(err)
	}
	if OwnerGone(filepath.Base(dir)) {
		t.Error("a folder of this live process counts as gone")
	}
	if !OwnerGone(fmt.Sprintf("napilab-x-pid%d-123", deadPid(t))) {
		t.Error("a folder of a dead process does not count as gone")
	}
}
