package results

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteReplacesLink: result.json is written beside and renamed into
// place: a link planted as result.json is replaced, its target untouched,
// and no temporary file is left.
func TestWriteReplacesLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, ResultFile)); err != nil {
		t.Fatal(err)
	}
	r := &Result{Scenario: "s", Verdict: Fail}
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the link's target was overwritten: %q", b)
	}
	fi, err := os.Lstat(filepath.Join(dir, ResultFile))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("result.json is %v (%v), want a regular file", fi, err)
	}
	got, err := Read(filepath.Join(dir, ResultFile))
	if err != nil || got.Verdict != Fail {
		t.Errorf("read back %+v, %v", got, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the folder holds %d entries, want result.json alone", len(ents))
	}
}
