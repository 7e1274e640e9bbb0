package kernels

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// publishRecorded publishes a fake artifact whose build record holds the
// bzImage's size and sha256, as publish writes them.
func publishRecorded(t *testing.T, spec *Spec, l layout) *Artifact {
	t.Helper()
	a := publishFake(t, spec, l)
	image := []byte("MZ" + strings.Repeat("k", 4096))
	if err := os.WriteFile(a.BzImage, image, 0o644); err != nil {
		t.Fatal(err)
	}
	a.Info.BzImageSize, a.Info.BzImageSHA256 = int64(len(image)), sumBytes(image)
	recordFiles(t, a.Dir, &a.Info)
	if err := writeJSON(filepath.Join(a.Dir, buildInfoFile), a.Info); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestBuildDoesNotReuseDamagedBzImage(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"truncated": func(path string) error { return os.Truncate(path, 100) },
		"same size, other bytes": func(path string) error {
			return os.WriteFile(path, []byte("MZ"+strings.Repeat("x", 4096)), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			spec, l := fakeLab(t)
			a := publishRecorded(t, spec, l)
			var lines []string
			progress := func(p Progress) { lines = append(lines, p.Line) }
			got, err := Build(context.Background(), spec, Options{CacheDir: l.root, Progress: progress})
			if err != nil || !got.Cached {
				t.Fatalf("intact artifact: Build = %v, %v; want a cache hit", got, err)
			}
			if err := damage(a.BzImage); err != nil {
				t.Fatal(err)
			}
			lines = nil
			_, err = Build(context.Background(), spec, Options{CacheDir: l.root, Progress: progress})
			var mt *MissingToolError
			if !errors.As(err, &mt) {
				t.Fatalf("damaged artifact: Build = %v, want a rebuild (which needs make)", err)
			}
			if !strings.Contains(strings.Join(lines, "\n"), a.BzImage) {
				t.Errorf("progress %q does not say the cached bzImage was damaged", lines)
			}
		})
	}
}

func TestLoadArtifactChecksSize(t *testing.T) {
	spec, l := fakeLab(t)
	a := publishRecorded(t, spec, l)
	if _, err := loadArtifact(a.Dir); err != nil {
		t.Fatalf("intact: %v", err)
	}
	if err := os.Truncate(a.BzImage, 10); err != nil {
		t.Fatal(err)
	}
	_, err := loadArtifact(a.Dir)
	if err == nil || !strings.Contains(err.Error(), "10 bytes, build record says 4098") {
		t.Errorf("truncated: loadArtifact = %v, want the sizes named", err)
	}
}

// BenchmarkCheckSum measures the hash check a reuse pays for a 10 MB bzImage.
func BenchmarkCheckSum(b *testing.B) {
	path := filepath.Join(b.TempDir(), bzImageFile)
	data := make([]byte, 10<<20)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	a := &Artifact{Dir: filepath.Dir(path), BzImage: path, Info: BuildInfo{Files: map[string]FileSum{bzImageFile: {Size: int64(len(data)), SHA256: sumBytes(data)}}}}
	for b.Loop() {
		if err := a.checkSum(); err != nil {
			b.Fatal(err)
		}
	}
}
