package kernels

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FileSum is an artifact file's size and sha256, as build.json records it.
type FileSum struct {
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// SHA256 is its content's hex sha256.
	SHA256 string `json:"sha256"`
}

// artifactFiles are the files of an artifact that build.json's Files
// records: everything the lab boots (bzImage, or vmlinux through PVH) or
// puts into a guest image. The first two are always there.
var artifactFiles = []string{bzImageFile, configFile, ReleaseFile, BuiltinFile, BuiltinModinfoFile, VmlinuxFile}

// errOldRecord marks a build.json written before Files existed: its
// artifact cannot be verified, so it is rebuilt (or refused in an archive).
var errOldRecord = errors.New("build record has no file sha256s (written by an older lab)")

// loadArtifact reads a published artifact dir. It fails unless build.json
// and bzImage exist, every file build.json records is a regular file of the
// recorded size, no artifact file is there unrecorded, and kernel.release
// names a valid release. A record without Files loads (lookups and GC still
// see it) but fails checkSum.
func loadArtifact(dir string) (*Artifact, error) {
	data, err := os.ReadFile(filepath.Join(dir, buildInfoFile))
	if err != nil {
		return nil, fmt.Errorf("failed to read artifact: %w", err)
	}
	var info BuildInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", filepath.Join(dir, buildInfoFile), err)
	}
	a := newArtifact(dir, info)
	fi, err := os.Stat(a.BzImage)
	if err != nil {
		return nil, fmt.Errorf("failed to read artifact: %w", err)
	}
	if want := info.BzImageSize; want > 0 && fi.Size() != want {
		return nil, fmt.Errorf("cached %s is truncated or damaged: %d bytes, build record says %d", a.BzImage, fi.Size(), want)
	}
	if info.Files != nil {
		if err := a.checkSizes(); err != nil {
			return nil, err
		}
	}
	if _, err := a.readRelease(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return a, nil
}

// checkSizes checks the artifact's files against Files by name, type and
// size (a stat each: loadArtifact runs on every lookup).
func (a *Artifact) checkSizes() error {
	record := filepath.Join(a.Dir, buildInfoFile)
	for name, f := range a.Info.Files {
		if !isArtifactFile(name) {
			return fmt.Errorf("%s records an unknown file %q", record, name)
		}
		if !sha256Re.MatchString(f.SHA256) {
			return fmt.Errorf("%s: bad sha256 %q for %s", record, f.SHA256, name)
		}
	}
	if f, ok := a.Info.Files[bzImageFile]; ok && a.Info.BzImageSHA256 != "" && f.SHA256 != a.Info.BzImageSHA256 {
		return fmt.Errorf("%s gives bzImage two sha256s (%.12s and %.12s)", record, f.SHA256, a.Info.BzImageSHA256)
	}
	for i, name := range artifactFiles {
		path := filepath.Join(a.Dir, name)
		f, recorded := a.Info.Files[name]
		fi, err := os.Lstat(path)
		switch {
		case !recorded && i < 2:
			return fmt.Errorf("%s records no %s", record, name)
		case !recorded && errors.Is(err, fs.ErrNotExist):
			continue
		case !recorded:
			return fmt.Errorf("cached %s is not in its build record", path)
		case err != nil:
			return fmt.Errorf("cached artifact is damaged: %w", err)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("cached %s is damaged: a %s, want a regular file", path, fi.Mode().Type())
		case fi.Size() != f.Size:
			return fmt.Errorf("cached %s is truncated or damaged: %d bytes, build record says %d", path, fi.Size(), f.Size)
		}
	}
	return nil
}

// isArtifactFile reports whether name is one of artifactFiles.
func isArtifactFile(name string) bool {
	for _, n := range artifactFiles {
		if n == name {
			return true
		}
	}
	return false
}

// checkSum hashes every file build.json records and compares it with the
// record; Build runs it before reusing an artifact, so it is what a boot or
// an image is made from. A record without Files fails (errOldRecord): what
// it would boot was never hashed. Hashing costs ~1 s per GB, next to a boot
// of tens of seconds.
func (a *Artifact) checkSum() error {
	if len(a.Info.Files) == 0 {
		return fmt.Errorf("cached %s: %w", a.Dir, errOldRecord)
	}
	for _, name := range artifactFiles {
		want, ok := a.Info.Files[name]
		if !ok {
			continue
		}
		path := filepath.Join(a.Dir, name)
		got, size, err := fileSumSize(path)
		if err != nil {
			return err
		}
		if got != want.SHA256 || size != want.Size {
			return fmt.Errorf("cached %s does not match its build record: sha256 %.12s (%d bytes), want %.12s (%d bytes)", path, got, size, want.SHA256, want.Size)
		}
	}
	return nil
}

// Release returns the kernel release (uname -r) the build recorded, or ""
// when the artifact holds none or an invalid one (loadArtifact refuses that).
func (a *Artifact) Release() string {
	r, err := a.readRelease()
	if err != nil {
		return ""
	}
	return r
}

// readRelease reads and checks the artifact's kernel.release.
func (a *Artifact) readRelease() (string, error) {
	path := filepath.Join(a.Dir, ReleaseFile)
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRelease+2))
	if err != nil {
		return "", fmt.Errorf("failed to read %s: %w", path, err)
	}
	r, err := ParseRelease(data)
	if err != nil {
		return "", fmt.Errorf("cached %s: %w", path, err)
	}
	return r, nil
}
