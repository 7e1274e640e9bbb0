package kernels

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrNotCached is Build's error under Options.CacheOnly when the cache
// holds no artifact for the spec's inputs.
var ErrNotCached = errors.New("not in the cache")

var keyRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FindKey returns the cached artifact whose cache key is key, or nil. It
// runs no make and reads nothing outside <root>/kernels; a malformed key is
// an error.
func FindKey(root, key string) (*Artifact, error) {
	if !keyRe.MatchString(key) {
		return nil, fmt.Errorf("bad kernel key %q: want 64 hex digits", key)
	}
	dir := layout{root}.kernelsDir()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to read the kernel cache: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasSuffix(e.Name(), "-"+key[:16]) {
			continue
		}
		if a, err := loadArtifact(filepath.Join(dir, e.Name())); err == nil && a.Key == key {
			return a, nil
		}
	}
	return nil, nil
}
