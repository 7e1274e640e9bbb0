package kernels

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Artifact files inside an artifact dir.
const (
	bzImageFile   = "bzImage"
	configFile    = "config"
	buildInfoFile = "build.json"
)

// Artifact files for a userspace, published when the build made them.
const (
	// BuiltinFile lists the built-in modules (kbuild's modules.builtin).
	BuiltinFile = "modules.builtin"
	// BuiltinModinfoFile is kbuild's modules.builtin.modinfo.
	BuiltinModinfoFile = "modules.builtin.modinfo"
	// ReleaseFile holds the kernel release (uname -r).
	ReleaseFile = "kernel.release"
	// VmlinuxFile is the uncompressed kernel; with CONFIG_PVH its ELF
	// notes carry the PVH entry QEMU boots directly.
	VmlinuxFile = "vmlinux"
)

// indexEntry maps an input hash to a published artifact.
type indexEntry struct {
	// Artifact is the artifact dir's name under <root>/kernels.
	Artifact string `json:"artifact"`
	// Key is the artifact's cache key.
	Key string `json:"key"`
}

// checkIndexed is lookupIndex for a build about to reuse the artifact: it
// also checks every recorded file's sha256 against the build record. When an
// artifact is recorded but damaged, why says so.
func checkIndexed(l layout, inputHash string) (a *Artifact, why string) {
	a, ok := lookupIndex(l, inputHash)
	if !ok {
		return nil, damaged(l, inputHash)
	}
	if err := a.checkSum(); err != nil {
		return nil, err.Error()
	}
	return a, ""
}

// damaged says why the artifact indexed for inputHash fails to load, or ""
// when there is none or it is simply missing.
func damaged(l layout, inputHash string) string {
	data, err := os.ReadFile(filepath.Join(l.indexDir(), inputHash+".json"))
	var e indexEntry
	if err != nil || json.Unmarshal(data, &e) != nil || e.Artifact == "" || e.Artifact != filepath.Base(e.Artifact) {
		return ""
	}
	_, err = loadArtifact(filepath.Join(l.kernelsDir(), e.Artifact))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return err.Error()
}

// lookupIndex returns the artifact recorded for an input hash, if it is still complete.
func lookupIndex(l layout, inputHash string) (*Artifact, bool) {
	data, err := os.ReadFile(filepath.Join(l.indexDir(), inputHash+".json"))
	if err != nil {
		return nil, false
	}
	var e indexEntry
	if json.Unmarshal(data, &e) != nil || e.Artifact == "" || e.Artifact != filepath.Base(e.Artifact) {
		return nil, false
	}
	a, err := loadArtifact(filepath.Join(l.kernelsDir(), e.Artifact))
	if err != nil || a.Key != e.Key {
		return nil, false
	}
	return a, true
}

// writeIndex records that inputHash builds the artifact a.
func writeIndex(l layout, inputHash string, a *Artifact) error {
	e := indexEntry{Artifact: filepath.Base(a.Dir), Key: a.Key}
	return writeJSON(filepath.Join(l.indexDir(), inputHash+".json"), e)
}

// newArtifact describes the artifact dir holding info's build.
func newArtifact(dir string, info BuildInfo) *Artifact {
	return &Artifact{
		Dir:     dir,
		BzImage: filepath.Join(dir, bzImageFile),
		Config:  filepath.Join(dir, configFile),
		Key:     info.Key,
		Info:    info,
	}
}

// BuildConfig is a build's final .config: each set symbol's value
// ("CONFIG_HZ" to "1000").
type BuildConfig map[string]string

// ReadConfig reads the final .config published beside bzImage.
func ReadConfig(bzImage string) (BuildConfig, error) {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(bzImage), configFile))
	if err != nil {
		return nil, err
	}
	return parseDotconfig(data), nil
}

// Value is symbol sym's value, "n" when it is not set (or c is nil: a
// config that could not be read sets nothing).
func (c BuildConfig) Value(sym string) string {
	if v, ok := c[sym]; ok {
		return v
	}
	return notSet
}
