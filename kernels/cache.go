package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// DefaultCacheDir returns $NAPILAB_CACHE if set, else the user cache dir plus "/napilab".
func DefaultCacheDir() string {
	if dir := os.Getenv("NAPILAB_CACHE"); dir != "" {
		return dir
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "napilab")
}

// layout names the paths under a cache root.
type layout struct{ root string }

func (l layout) srcDir() string             { return filepath.Join(l.root, "src") }
func (l layout) workDir(name string) string { return filepath.Join(l.root, "work", name) }
func (l layout) kernelsDir() string         { return filepath.Join(l.root, "kernels") }
func (l layout) indexDir() string           { return filepath.Join(l.root, "index") }
func (l layout) stampsDir() string          { return filepath.Join(l.root, "stamps") }
func (l layout) ccacheDir(name string) string {
	return filepath.Join(l.root, "ccaches", name)
}
func (l layout) lockFile() string { return filepath.Join(l.root, "lock") }
func (l layout) locksDir() string { return filepath.Join(l.root, "locks") }

// pristineDir is where a tarball with the given sha256 is extracted.
func (l layout) pristineDir(tarball, sum string) string {
	base := filepath.Base(tarball)
	for _, ext := range []string{".tar.xz", ".tar.gz", ".tar.bz2", ".tgz", ".tar"} {
		if trimmed, ok := strings.CutSuffix(base, ext); ok {
			base = trimmed
			break
		}
	}
	return filepath.Join(l.srcDir(), base+"-"+sum[:12])
}

// tarStamp memoises a tarball's sha256, valid while path, size and mtime match.
type tarStamp struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
	SHA256  string `json:"sha256"`
}

// tarballSum returns the tarball's sha256, from the stamp file when still valid.
func tarballSum(l layout, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("failed to resolve %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("failed to stat tarball: %w", err)
	}
	want := tarStamp{Path: abs, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
	stampPath := filepath.Join(l.stampsDir(), "tarball-"+sumString(abs)[:16]+".json")
	var got tarStamp
	if data, err := os.ReadFile(stampPath); err == nil && json.Unmarshal(data, &got) == nil {
		if sum := got.SHA256; len(sum) == sha256.Size*2 {
			got.SHA256 = ""
			if got == want {
				return sum, nil
			}
		}
	}
	sum, err := fileSum(abs)
	if err != nil {
		return "", err
	}
	want.SHA256 = sum
	if err := writeJSON(stampPath, want); err != nil {
		return "", err
	}
	return sum, nil
}

// fileSum returns the hex sha256 of a file's content.
func fileSum(path string) (string, error) {
	sum, _, err := fileSumSize(path)
	return sum, err
}

// fileSumSize returns a file's hex sha256 and size.
func fileSumSize(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("failed to hash %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("failed to hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// sumBytes returns the hex sha256 of data.
func sumBytes(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// sumString returns the hex sha256 of s.
func sumString(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// writeJSON writes v as indented JSON to path atomically (temp file + rename).
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to encode %s: %w", filepath.Base(path), err)
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// writeFileAtomic writes data to path through a temp file in the same dir.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err == nil {
		err = SyncDir(dir)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// writeSynced writes data to a new file at path and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir fsyncs a folder so that the names created or renamed in it last.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
