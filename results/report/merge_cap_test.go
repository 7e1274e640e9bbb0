package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeTotalCap: shards over the total are refused before anything is
// copied.
func TestMergeTotalCap(t *testing.T) {
	old := mergeTotal
	mergeTotal = 4 << 10
	defer func() { mergeTotal = old }()
	root := t.TempDir()
	shard := mergeShard(t, root)
	if err := os.WriteFile(filepath.Join(shard, "a", "console.log"), make([]byte, 8<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "merged")
	_, err := Merge([]string{shard}, out)
	if err == nil || !strings.Contains(err.Error(), "the shards hold over 4096 bytes") {
		t.Errorf("error %v, want the total refused", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the merged folder was made (%v), want nothing written", err)
	}
}
