package kernels

// Pack and Unpack move built kernels between machines, so that one CI job
// builds and N test shards boot. The archive is a plain tar: a manifest,
// then each artifact's files under its dir name.
//
//	napilab-kernels.json        packManifest: dirs, keys, input hashes, file sizes and sha256s
//	stock-6.1-<key16>/bzImage   config, build.json, and what the build published besides
//
// Unpack takes the archive as untrusted input: see unpack.go.

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

const (
	// packManifestName is the archive's first entry.
	packManifestName = "napilab-kernels.json"
	// packFormat versions the archive layout. 2: build.json records every
	// artifact file's sha256 (Files), which unpack requires.
	packFormat = "napilab-kernels-2"
)

// packedFiles are the artifact files an archive may hold: build.json and
// what it records. The first three must be there.
var packedFiles = append([]string{buildInfoFile}, artifactFiles...)

// packManifest is the archive's table of contents.
type packManifest struct {
	// Format is packFormat.
	Format string `json:"format"`
	// Kernels are the packed artifacts.
	Kernels []packedKernel `json:"kernels"`
}

// packedKernel is one artifact in an archive.
type packedKernel struct {
	// Dir is the artifact dir's name, "<spec>-<key16>".
	Dir string `json:"dir"`
	// Spec is the (flavoured) spec name.
	Spec string `json:"spec"`
	// Flavour is the flavour it was built as, in ParseFlavour's words.
	Flavour string `json:"flavour,omitempty"`
	// Key is the artifact's cache key.
	Key string `json:"key"`
	// InputHash is the packing machine's input hash (the index entry).
	InputHash string `json:"input_hash"`
	// Files are the artifact's files.
	Files []packedFile `json:"files"`
}

// packedFile is one file of a packed artifact.
type packedFile struct {
	// Name is the file's name in the artifact dir.
	Name string `json:"name"`
	// Size is its size in bytes.
	Size int64 `json:"size"`
	// SHA256 is its content's hex sha256.
	SHA256 string `json:"sha256"`
}

// Pack writes the cached kernels of specs (each as it is: pass
// spec.Flavoured(f) for a flavour) to w. It never builds: a spec whose
// current inputs have no artifact is an ErrNotCached error. Each kernel is
// held (see Hold) while it is read.
func Pack(ctx context.Context, w io.Writer, specs []*Spec, opts Options) ([]*Artifact, error) {
	m := packManifest{Format: packFormat}
	var arts []*Artifact
	seen := map[string]bool{}
	for _, spec := range specs {
		a, k, release, err := packedOf(ctx, spec, opts)
		if err != nil {
			return nil, err
		}
		defer release()
		if !seen[k.Dir] {
			seen[k.Dir] = true
			m.Kernels = append(m.Kernels, *k)
			arts = append(arts, a)
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(packHeader(packManifestName, int64(len(data)), time.Now())); err != nil {
		return nil, fmt.Errorf("failed to write archive: %w", err)
	}
	if _, err := tw.Write(data); err != nil {
		return nil, fmt.Errorf("failed to write archive: %w", err)
	}
	for i, k := range m.Kernels {
		for _, f := range k.Files {
			if err := packFile(tw, arts[i], k.Dir, f); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("failed to write archive: %w", err)
	}
	return arts, nil
}

// packedOf finds spec's cached kernel, holds it and describes it for the manifest.
func packedOf(ctx context.Context, spec *Spec, opts Options) (*Artifact, *packedKernel, func(), error) {
	b, err := newBuilder(ctx, spec, Options{CacheDir: opts.CacheDir, CacheOnly: true})
	if err != nil {
		return nil, nil, nil, err
	}
	inputHash := b.in.hash()
	a, why := checkIndexed(b.layout, inputHash)
	if a == nil {
		if why == "" {
			why = "build it first with lab kernel build"
		}
		return nil, nil, nil, fmt.Errorf("kernel %s: %w (%s)", spec.Name, ErrNotCached, why)
	}
	release, err := Hold(a.BzImage)
	if err != nil {
		return nil, nil, nil, err
	}
	k := &packedKernel{Dir: filepath.Base(a.Dir), Spec: a.Info.Spec, Flavour: spec.Flavour().String(), Key: a.Key, InputHash: inputHash}
	for i, name := range packedFiles {
		sum, size, err := fileSumSize(filepath.Join(a.Dir, name))
		if errors.Is(err, fs.ErrNotExist) && i >= 3 {
			continue // published only when the build made it
		}
		if err != nil {
			release()
			return nil, nil, nil, err
		}
		k.Files = append(k.Files, packedFile{Name: name, Size: size, SHA256: sum})
	}
	return a, k, release, nil
}

// packFile copies one artifact file into the archive, checking it still is
// what the manifest says.
func packFile(tw *tar.Writer, a *Artifact, dir string, f packedFile) error {
	in, err := os.Open(filepath.Join(a.Dir, f.Name))
	if err != nil {
		return fmt.Errorf("failed to pack %s: %w", f.Name, err)
	}
	defer in.Close()
	if err := tw.WriteHeader(packHeader(dir+"/"+f.Name, f.Size, a.Info.Date)); err != nil {
		return fmt.Errorf("failed to write archive: %w", err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(tw, h), in, f.Size); err != nil {
		return fmt.Errorf("failed to pack %s: %w", filepath.Join(a.Dir, f.Name), err)
	}
	if hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		return fmt.Errorf("failed to pack %s: it changed while being packed", filepath.Join(a.Dir, f.Name))
	}
	return nil
}

// packHeader is the tar header of one regular file.
func packHeader(name string, size int64, mtime time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: mtime.UTC(), Format: tar.FormatPAX}
}
