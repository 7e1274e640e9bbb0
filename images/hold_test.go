package images

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/internal/procgroup"
)

// composeN publishes n composed images over one rootfs, oldest first.
func composeN(t *testing.T, dir string, n int) []*Image {
	t.Helper()
	rootfs := filepath.Join(dir, "debian-bookworm-x.cpio")
	if err := os.WriteFile(rootfs, []byte("rootfs"), 0o644); err != nil {
		t.Fatal(err)
	}
	var imgs []*Image
	for i := range n {
		overlay := fmt.Appendf(nil, "overlay %d", i)
		img := &Image{Path: filepath.Join(dir, fmt.Sprintf("debian-img-%02d.cpio", len(imgs))),
			Size: int64(len("rootfs") + len(overlay))}
		if err := publishComposed(context.Background(), img, rootfs, overlay); err != nil {
			t.Fatal(err)
		}
		tm := time.Now().Add(time.Duration(i-100) * time.Second)
		os.Chtimes(img.Path, tm, tm)
		imgs = append(imgs, img)
	}
	return imgs
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// lab run holds every image it composes until its last run: none may be pruned
// while held, however many there are; released ones go at the next compose.
func TestComposedImagesHeldUntilReleased(t *testing.T) {
	dir := t.TempDir()
	imgs := composeN(t, dir, maxComposed+2)
	for _, img := range imgs {
		if !exists(img.Path) {
			t.Errorf("%s was pruned while held", filepath.Base(img.Path))
		}
	}
	for _, img := range imgs {
		img.Release()
	}
	more := composeN(t, dir, 1)
	defer more[0].Release()
	left, _ := filepath.Glob(filepath.Join(dir, "debian-img-*.cpio"))
	if len(left) != maxComposed {
		t.Errorf("after release: %d composed images left, want %d", len(left), maxComposed)
	}
}

// A run in another process holds the oldest image with a shared flock:
// prune takes LOCK_EX|LOCK_NB on it and skips it.
func TestPruneSkipsImageHeldByAnotherProcess(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("needs flock(1) from util-linux")
	}
	dir := t.TempDir()
	var paths []string
	for i, name := range []string{"debian-img-a.cpio", "debian-img-b.cpio", "debian-img-c.cpio"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(name), 0o644)
		tm := time.Unix(int64(1000+i), 0)
		os.Chtimes(p, tm, tm)
		paths = append(paths, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := exec.CommandContext(ctx, "flock", "--shared", paths[0], "-c", "echo held; exec sleep 30")
	procgroup.Set(holder, procgroup.KillOnCancel(5*time.Second))
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Wait()
	defer cancel()
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "held" {
		t.Fatalf("holder said %q", line)
	}
	removed := pruneComposed(dir, 1)
	if !exists(paths[0]) {
		t.Error("the held image was pruned")
	}
	if exists(paths[1]) || len(removed) != 1 || removed[0] != paths[1] {
		t.Errorf("removed %q, want just %s", removed, paths[1])
	}
	if !exists(paths[2]) {
		t.Error("the newest image was pruned")
	}
}

func TestHoldFailsOnPrunedImage(t *testing.T) {
	_, err := Hold(filepath.Join(t.TempDir(), "debian-img-gone.cpio"))
	if err == nil || !strings.Contains(err.Error(), "debian-img-gone.cpio") {
		t.Errorf("Hold of a missing image = %v, want an error naming it", err)
	}
}
