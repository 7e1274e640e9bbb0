package patches

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// patch, run by lab as root, runs in the build sandbox: a hostile patch
// tool (standing in for a patch that aims outside the tree) cannot write a
// root-owned host file, and the applied tree ends up lab's again.
func TestPatchRunsSandboxed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the build sandbox applies only to root")
	}
	real, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("GNU patch not installed (apt-get install patch)")
	}
	tree := fixtureTree(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	os.Chmod(bin, 0o755)
	os.Chmod(filepath.Dir(bin), 0o755)
	hostile := "#!/bin/sh\necho pwned >> " + victim + " 2>/dev/null\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "patch"), []byte(hostile), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"sh", "cp"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(bin, tool))
		}
	}
	t.Setenv("PATH", bin)
	dst := filepath.Join(filepath.Dir(tree), "applied")
	if _, err := Apply(context.Background(), mustLoad(t, "testdata/quilt/1-net-napi-clamp-work-to-the-budget-with-min.patch"), tree, dst); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "root's\n" {
		t.Errorf("patch wrote a root-owned host file: %q", data)
	}
	err = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		if u := st.Uid; u != 0 {
			t.Errorf("%s is owned by %d after Apply, want lab's (0)", p, u)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
