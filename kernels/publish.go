package kernels

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// publish copies the build outputs into a temp dir and renames it to dir.
func (b *builder) publish(dir, key, work string, final []byte, objects int) (*Artifact, error) {
	if err := os.MkdirAll(b.layout.kernelsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create kernels dir: %w", err)
	}
	tmp, err := os.MkdirTemp(b.layout.kernelsDir(), ".tmp-")
	if err != nil {
		return nil, fmt.Errorf("failed to create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	// make wrote work sandboxed: no symlink out of it is followed.
	image, err := readBuildFile(work, filepath.Join("arch", "x86", "boot", "bzImage"))
	if err != nil {
		return nil, fmt.Errorf("failed to read bzImage: %w", err)
	}
	info := BuildInfo{Spec: b.spec.Name, Key: key, Base: b.spec.Base.Tarball, BaseSHA256: b.in.tarSum,
		Patches: append([]string{}, b.spec.Patches...), Compiler: b.in.compiler, CC: b.in.cc(),
		Seconds: time.Since(b.start).Seconds(), Date: time.Now().UTC(), BzImageSize: int64(len(image)),
		BzImageSHA256: sumBytes(image),
		Objects:       objects}
	notes := b.notes
	if !b.in.ccache {
		notes = append(notes, "ccache not found on PATH; built with CC=gcc")
	}
	info.Note = strings.Join(notes, "; ")
	info.Unmet = b.unmet
	info.Selftests = b.spec.Config.Selftests
	info.Debug = b.spec.Config.Debug
	if b.in.tree != nil {
		info.Base, info.Source = b.in.tree.Dir, b.in.tree
	}
	if b.plan != nil {
		info.Reuses = b.plan.Base
	}
	if b.marker != nil {
		info.PatchResults = b.marker.Results
	}
	files, err := publishFiles(tmp, work, image, final)
	if err != nil {
		return nil, err
	}
	info.Files = files
	if err := writeJSON(filepath.Join(tmp, buildInfoFile), info); err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("failed to chmod artifact: %w", err)
	}
	// Under the lock, an existing dir here lacks build.json: a leftover, not a hit.
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("failed to remove stale artifact: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("failed to publish artifact: %w", err)
	}
	if err := SyncDir(b.layout.kernelsDir()); err != nil {
		return nil, fmt.Errorf("failed to publish artifact: %w", err)
	}
	return newArtifact(dir, info), nil
}

// published are the build outputs copied into an artifact besides bzImage
// and config, by artifact name and path under the work dir: what a
// userspace needs to see the built-in "modules" (modprobe of a built-in
// succeeds once depmod has read modules.builtin), the release they go
// under, and the vmlinux a PVH boot loads.
var published = []struct{ name, src string }{
	{ReleaseFile, "include/config/kernel.release"},
	{BuiltinFile, "modules.builtin"},
	{BuiltinModinfoFile, "modules.builtin.modinfo"},
	{VmlinuxFile, "vmlinux"},
}

// publishFiles writes bzImage, config and whichever of published the build
// made into tmp and returns their sizes and sha256s for build.json. The
// release is checked here, where it leaves the sandbox: it becomes a path.
func publishFiles(tmp, work string, image, final []byte) (map[string]FileSum, error) {
	files := map[string]FileSum{}
	put := func(name string, data []byte) error {
		if err := writeSynced(filepath.Join(tmp, name), data); err != nil {
			return fmt.Errorf("failed to write %s: %w", name, err)
		}
		files[name] = FileSum{Size: int64(len(data)), SHA256: sumBytes(data)}
		return nil
	}
	if err := put(bzImageFile, image); err != nil {
		return nil, err
	}
	if err := put(configFile, final); err != nil {
		return nil, err
	}
	for _, p := range published {
		// make wrote work sandboxed: no symlink out of it is followed.
		data, err := readBuildFile(work, p.src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // published only when the build made it
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read %s: %w", p.src, err)
		}
		if p.name == ReleaseFile {
			if _, err := ParseRelease(data); err != nil {
				return nil, fmt.Errorf("build wrote %s: %w", filepath.Join(work, p.src), err)
			}
		}
		if err := put(p.name, data); err != nil {
			return nil, err
		}
	}
	return files, nil
}
