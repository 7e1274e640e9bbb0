package kernels

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzUnpack feeds archives to Unpack with a fresh cache: it must not
// panic, write beside the cache, or write more than the archive holds (no
// entry expands: every byte written came from the archive).
func FuzzUnpack(f *testing.F) {
	f.Add(writeEntries(f, craftEntries(f, goodFiles(), nil)))
	bad := goodFiles()
	bad[ReleaseFile] = "../../../../etc/cron.d\n"
	f.Add(writeEntries(f, craftEntries(f, bad, nil)))
	for _, name := range []string{"pax-0.0.tar", "pax-0.1.tar", "pax-1.0.tar", "gnu.tar"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "sparse", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.Replace(raw, []byte(`"napilab-kernels-1"`), []byte(`"`+packFormat+`"`), 1))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		root := filepath.Join(parent, "cache")
		Unpack(context.Background(), bytes.NewReader(data), nil, Options{CacheDir: root})
		if ents, _ := os.ReadDir(parent); len(ents) > 1 {
			t.Fatalf("Unpack wrote beside the cache: %d entries", len(ents))
		}
		// The cache's own files (lock, index entry) are small.
		if n := treeSize(t, parent); n > int64(len(data))+4096 {
			t.Fatalf("a %d-byte archive wrote %d bytes", len(data), n)
		}
	})
}
