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

	"napilab/patches"
)

// inputFormat versions the input hash; bump it when the build procedure changes.
const inputFormat = "napilab-kernel-1"

// inputs is everything a build depends on, resolved before any make runs.
type inputs struct {
	spec *Spec
	// tarSum is the tarball's sha256, or for a tree or git base the sha256
	// of its git tree id (the source's content either way).
	tarSum string
	// tree is the source state of a tree or git base, else nil.
	tree      *TreeState
	fragments []Fragment
	fragData  [][]byte
	series    []*patches.Series // one per spec.Patches entry
	compiler  string
	ccache    bool
}

// resolveInputs checks the tarball, hashes it (memoised) and reads fragments and patches.
func resolveInputs(ctx context.Context, l layout, spec *Spec) (*inputs, error) {
	if spec.Base.IsTree() {
		return resolveTreeInputs(ctx, l, spec)
	}
	if err := resolveBase(ctx, l, spec, false); err != nil {
		return nil, err
	}
	if _, err := os.Stat(spec.Base.Tarball); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &MissingTarballError{Path: spec.Base.Tarball, Package: spec.Base.Package, Suite: spec.Base.Suite}
		}
		return nil, fmt.Errorf("failed to stat tarball: %w", err)
	}
	in := &inputs{spec: spec, ccache: haveCcache()}
	var err error
	if in.tarSum, err = tarballSum(l, spec.Base.Tarball); err != nil {
		return nil, err
	}
	if err := in.resolveRest(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// resolveTreeInputs resolves a tree or git base to its source state.
func resolveTreeInputs(ctx context.Context, l layout, spec *Spec) (*inputs, error) {
	st, err := resolveTree(ctx, l, spec.Base)
	if err != nil {
		return nil, err
	}
	in := &inputs{spec: spec, ccache: haveCcache(), tree: st, tarSum: sumString("git-tree " + st.Tree)}
	if err := in.resolveRest(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// resolveRest reads the fragments and patches and asks the compiler's version.
func (in *inputs) resolveRest(ctx context.Context) error {
	spec := in.spec
	var err error
	for _, path := range spec.Config.Fragments {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("failed to read fragment: %w", err)
		}
		frag, err := ParseFragment(path, data)
		if err != nil {
			return err
		}
		in.fragments = append(in.fragments, frag)
		in.fragData = append(in.fragData, data)
	}
	if in.series, err = loadSeries(spec); err != nil {
		return err
	}
	in.compiler, err = compilerVersion(ctx)
	return err
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
	for _, c := range in.spec.Config.Selftests {
		field(h, "selftests", []byte(c))
	}
	if len(in.spec.Config.Selftests) > 0 {
		field(h, "kselftest-config", kselftestConfig)
	}
	if in.spec.Config.Debug {
		field(h, "debug-config", debugConfig)
	}
	for _, s := range in.series {
		field(h, "patch", []byte(s.Hash()))
	}
	field(h, "compiler", []byte(in.compiler))
	field(h, "ccache", []byte(strconv.FormatBool(in.ccache)))
	return hex.EncodeToString(h.Sum(nil))
}

// key is the artifact cache key: tarball hash, patches, final .config, compiler.
func (in *inputs) key(finalConfig []byte) string {
	h := sha256.New()
	field(h, "tarball", []byte(in.tarSum))
	for _, s := range in.series {
		field(h, "patch", []byte(s.Hash()))
	}
	field(h, "config", finalConfig)
	field(h, "compiler", []byte(in.compiler))
	return hex.EncodeToString(h.Sum(nil))
}

// patchHash identifies the patched source: the tarball and the series hashes.
// The tarball is in so that a new tarball never reuses an old patched copy.
func (in *inputs) patchHash() string {
	h := sha256.New()
	field(h, "tarball", []byte(in.tarSum))
	for _, s := range in.series {
		field(h, "patch", []byte(s.Hash()))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hasPatches reports whether the spec has any patch to apply.
func (in *inputs) hasPatches() bool { return len(in.series) > 0 }

// patchSeries joins the spec's patch entries into the one series applied in order.
func (in *inputs) patchSeries() *patches.Series {
	return patches.Concat(in.spec.Name, in.series...)
}

// loadSeries loads every patch entry of spec: a patch file, a quilt folder,
// a git format-patch folder or an mbox.
func loadSeries(spec *Spec) ([]*patches.Series, error) {
	var out []*patches.Series
	for _, path := range spec.Patches {
		s, err := patches.Load(path)
		if err != nil {
			return nil, fmt.Errorf("failed to load patches of %s: %w", spec.Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// field writes a length-prefixed, named value so that field boundaries are unambiguous.
func field(h hash.Hash, name string, data []byte) {
	fmt.Fprintf(h, "%s %d\n", name, len(data))
	h.Write(data)
}
