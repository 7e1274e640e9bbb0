package images

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"
)

func TestWriteReproducible(t *testing.T) {
	files := []File{{Name: "init", Data: []byte("#!agent"), Mode: 0o755}, {Name: "etc/motd", Data: []byte("hi"), Mode: 0o644}}
	var a, b bytes.Buffer
	if err := Write(&a, files); err != nil {
		t.Fatal(err)
	}
	// Same files, other order: same bytes.
	if err := Write(&b, []File{files[1], files[0]}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two writes of the same files differ (%d vs %d bytes)", a.Len(), b.Len())
	}
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(bytes.NewReader(a.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cpio.Record{}
	for _, r := range recs {
		got[r.Name] = r
	}
	init, ok := got["init"]
	if !ok {
		t.Fatalf("no /init in %v", recs)
	}
	data, _ := io.ReadAll(io.NewSectionReader(init, 0, int64(init.FileSize)))
	if string(data) != "#!agent" || init.Mode&0o777 != 0o755 || init.MTime != 0 {
		t.Errorf("init = %q mode %o mtime %d", data, init.Mode, init.MTime)
	}
	con, ok := got["dev/console"]
	if !ok || con.Mode&cpio.S_IFMT != cpio.S_IFCHR || con.Rmajor != 5 || con.Rminor != 1 {
		t.Errorf("dev/console = %+v, want char 5:1", con.Info)
	}
	for _, d := range []string{"proc", "sys", "dev", "etc"} {
		if r, ok := got[d]; !ok || r.Mode&cpio.S_IFMT != cpio.S_IFDIR {
			t.Errorf("missing dir %s", d)
		}
	}
}

func TestBuildCached(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent")
	}
	dir, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// What a SIGKILLed lab left while building the agent: swept by the next
	// build, as is nothing of a live owner.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "images", fmt.Sprintf(".tmp-agent-pid%d-1", dead.Process.Pid))
	live := filepath.Join(dir, "images", fmt.Sprintf(".tmp-agent-pid%d-1", os.Getppid()))
	for _, p := range []string{stale, live} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first, err := Build(context.Background(), Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Build(context.Background(), Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || !second.Cached || first.Hash != second.Hash {
		t.Errorf("first %+v second %+v: want one build then a cache hit with the same hash", first, second)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s: a dead owner's scratch file was not removed (%v)", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("%s: a live owner's scratch file was removed (%v)", live, err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("building the agent wrote %s/%s: scratch belongs in the cache", tmp, ents[0].Name())
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "images"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") && filepath.Join(dir, "images", e.Name()) != live {
			t.Errorf("images/%s left after a build", e.Name())
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		img, err := Build(context.Background(), Options{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(img.Size), "image-bytes")
	}
}
