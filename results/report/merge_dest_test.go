package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/results"
)

// mergeShard makes root/shard/a, one run folder.
func mergeShard(t *testing.T, root string) string {
	t.Helper()
	run := filepath.Join(root, "shard", "a")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &results.Result{Scenario: "a", Verdict: results.Pass, Started: time.Now()}
	if err := Save(run, r); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "shard")
}

// TestMergeDestinationLinks: merge writes nothing through a link planted in
// or as its destination: the folder itself, a run folder in it, its
// junit.xml, a file of a run folder.
func TestMergeDestinationLinks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, out, elsewhere string)
		want  string // a part of the error, "" = merged without touching elsewhere
	}{
		{name: "the folder is a link", plant: func(t *testing.T, out, elsewhere string) {
			os.Symlink(elsewhere, out)
		}, want: "a link is refused"},
		{name: "a run folder is a link", plant: func(t *testing.T, out, elsewhere string) {
			os.Mkdir(out, 0o755)
			os.Symlink(elsewhere, filepath.Join(out, "a"))
		}, want: "links are refused"},
		{name: "junit.xml is a link", plant: func(t *testing.T, out, elsewhere string) {
			os.Mkdir(out, 0o755)
			os.Symlink(filepath.Join(elsewhere, "victim"), filepath.Join(out, "junit.xml"))
		}},
		{name: "a run's file is a link", plant: func(t *testing.T, out, elsewhere string) {
			os.MkdirAll(filepath.Join(out, "a"), 0o755)
			os.Symlink(filepath.Join(elsewhere, "victim"), filepath.Join(out, "a", "junit.xml"))
		}, want: "links are refused"},
		{name: "a run's file is a hard link", plant: func(t *testing.T, out, elsewhere string) {
			os.MkdirAll(filepath.Join(out, "a"), 0o755)
			if err := os.Link(filepath.Join(elsewhere, "victim"), filepath.Join(out, "a", "result.json")); err != nil {
				t.Skip(err)
			}
		}, want: "not a regular file of one link"},
		{name: "the folder is writable by others", plant: func(t *testing.T, out, elsewhere string) {
			os.Mkdir(out, 0o755)
			os.Chmod(out, 0o777)
		}, want: "not yours alone to write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			shard := mergeShard(t, root)
			elsewhere := filepath.Join(root, "elsewhere")
			os.Mkdir(elsewhere, 0o755)
			victim := filepath.Join(elsewhere, "victim")
			os.WriteFile(victim, []byte("keep"), 0o644)
			out := filepath.Join(root, "merged")
			tc.plant(t, out, elsewhere)
			_, err := Merge([]string{shard}, out)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("merge: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if b, _ := os.ReadFile(victim); string(b) != "keep" {
				t.Errorf("a file outside the merged folder was overwritten: %.40q", b)
			}
			if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
				t.Errorf("merge wrote %d entries outside the merged folder", len(ents)-1)
			}
		})
	}
}
