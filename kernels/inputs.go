package kernels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"strconv"
)

// inputFormat versions the input hash; bump it when the build procedure changes.
const inputFormat = "napilab-kernel-1"

// inputs is everything a build depends on, resolved before any make runs.
type inputs struct {
	spec      *Spec
	tarSum    string
	fragments []Fragment
	fragData  [][]byte
	patchData [][]byte
	compiler  string
	ccache    bool
}

// resolveInputs checks the tarball, hashes it (memoised) and reads fragments and patches.
func resolveInputs(ctx context.Context, l layout, spec *Spec) (*inputs, error) {
	if _, err := os.Stat(spec.Base.Tarball); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &MissingTarballError{Path: spec.Base.Tarball, Package: spec.Base.Package}
		}
		return nil, fmt.Errorf("failed to stat tarball: %w", err)
	}
	in := &inputs{spec: spec, ccache: haveCcache()}
	var err error
	if in.tarSum, err = tarballSum(l, spec.Base.Tarball); err != nil {
		return nil, err
	}
	for _, path := range spec.Config.Fragments {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("failed to read fragment: %w", err)
		}
		frag, err := ParseFragment(path, data)
		if err != nil {
			return nil, err
		}
		in.fragments = append(in.fragments, frag)
		in.fragData = append(in.fragData, data)
	}
	for _, path := range spec.Patches {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("failed to read patch: %w", err)
		}
		in.patchData = append(in.patchData, data)
	}
	if in.compiler, err = compilerVersion(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// cc returns the CC make variable: "ccache gcc" when ccache is available.
func (in *inputs) cc() string {
	if in.ccache {
		return "ccache gcc"
	}
	return "gcc"
}

// hash is the fast-path input hash: the resolved spec fields that shape the
// kernel, fragment and patch contents, tarball hash, compiler and ccache use.
// Description and cmdline are left out: they do not change the bzImage.
func (in *inputs) hash() string {
	h := sha256.New()
	field(h, "format", []byte(inputFormat))
	field(h, "name", []byte(in.spec.Name))
	field(h, "tarball", []byte(in.tarSum))
	field(h, "config-base", []byte(in.spec.Config.Base))
	for _, data := range in.fragData {
		field(h, "fragment", data)
	}
	for _, data := range in.patchData {
		field(h, "patch", data)
	}
	field(h, "compiler", []byte(in.compiler))
	field(h, "ccache", []byte(strconv.FormatBool(in.ccache)))
	return hex.EncodeToString(h.Sum(nil))
}

// key is the artifact cache key: tarball hash, patches, final .config, compiler.
func (in *inputs) key(finalConfig []byte) string {
	h := sha256.New()
	field(h, "tarball", []byte(in.tarSum))
	for _, data := range in.patchData {
		field(h, "patch", data)
	}
	field(h, "config", finalConfig)
	field(h, "compiler", []byte(in.compiler))
	return hex.EncodeToString(h.Sum(nil))
}

// patchHash identifies the patch series, naming the patched source copy.
func (in *inputs) patchHash() string {
	h := sha256.New()
	field(h, "tarball", []byte(in.tarSum))
	for _, data := range in.patchData {
		field(h, "patch", data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// field writes a length-prefixed, named value so that field boundaries are unambiguous.
func field(h hash.Hash, name string, data []byte) {
	fmt.Fprintf(h, "%s %d\n", name, len(data))
	h.Write(data)
}
