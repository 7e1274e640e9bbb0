package kernels

// A tree or git base is built from an export in the cache, one per spec
// name at a fixed path, src/<name>-tree, so that its work dir's Kbuild
// paths never change and make rebuilds only what changed. git read-tree
// --reset -u with a private index brings the export to the wanted tree: a
// file that did not change keeps its mtime, a changed one is written anew
// (mtime now, newer than its objects), a removed one is deleted. The
// spec's patches are then applied in place (only the files they touch are
// written), and undone by the next export.
//
//	src/<name>-tree/            the export: the tree, patched
//	trees/export/<name>.index   its private git index (stat cache)
//	trees/export/<name>.json    what it holds (exportState); absent while it changes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"napilab/patches"
)

// exportState records what an export holds.
type exportState struct {
	// Tree is the git tree id exported.
	Tree string `json:"tree"`
	// Series is the hash of the patches applied on top, "" for none.
	Series string `json:"series,omitempty"`
	// Created are the files the patches added (not in Tree), removed before the next export.
	Created []string `json:"created,omitempty"`
	// Marker describes the applied patches.
	Marker *patchedMarker `json:"marker,omitempty"`
}

func (l layout) exportDir(name string) string { return filepath.Join(l.srcDir(), name+"-tree") }
func (l layout) exportMeta(name, ext string) string {
	return filepath.Join(l.root, "trees", "export", name+ext)
}

// wantExport is the export state the builder's inputs call for.
func (b *builder) wantExport() exportState {
	want := exportState{Tree: b.in.tree.Tree}
	if b.in.hasPatches() {
		want.Series = b.in.patchSeries().Hash()
	}
	return want
}

// readyExport returns the export when it already holds the wanted state.
func (b *builder) readyExport() (string, *patchedMarker, bool) {
	got, err := readExportState(b.layout.exportMeta(b.spec.Name, ".json"))
	want := b.wantExport()
	if err != nil || got.Tree != want.Tree || got.Series != want.Series {
		return "", nil, false
	}
	dir := b.layout.exportDir(b.spec.Name)
	if _, err := os.Stat(filepath.Join(dir, "Makefile")); err != nil {
		return "", nil, false
	}
	return dir, got.Marker, true
}

// export brings src/<name>-tree to the inputs' tree and patches. Callers
// hold the build lock of the spec.
func (b *builder) export(ctx context.Context) (string, *patchedMarker, error) {
	if dir, m, ok := b.readyExport(); ok {
		return dir, m, nil
	}
	b.report(PhaseExtract, 0, "")
	name, l := b.spec.Name, b.layout
	dir, index, stamp := l.exportDir(name), l.exportMeta(name, ".index"), l.exportMeta(name, ".json")
	got, _ := readExportState(stamp)
	// Not trusted from here until the new state is written.
	if err := os.Remove(stamp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("failed to remove %s: %w", stamp, err)
	}
	for _, f := range got.Created {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("failed to remove %s: %w", f, err)
		}
	}
	if _, err := os.Stat(index); err != nil {
		// Without its index the folder's files are unknown: start afresh.
		if err := os.RemoveAll(dir); err != nil {
			return "", nil, fmt.Errorf("failed to remove stale export: %w", err)
		}
	}
	for _, d := range []string{dir, filepath.Dir(index)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", nil, fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	r, err := openRepo(ctx, l, b.spec.Base)
	if err != nil {
		return "", nil, err
	}
	if _, err := r.run(ctx, gitCmd{args: []string{"read-tree", "--reset", "-u", b.in.tree.Tree}, index: index, work: dir}); err != nil {
		return "", nil, fmt.Errorf("failed to export %s into %s: %w", b.in.tree.Dir, dir, err)
	}
	st := b.wantExport()
	if b.in.hasPatches() {
		if st.Marker, st.Created, err = b.patchInPlace(ctx, dir); err != nil {
			return "", nil, err
		}
	}
	if err := writeJSON(stamp, st); err != nil {
		return "", nil, err
	}
	return dir, st.Marker, nil
}

// patchInPlace applies the spec's series to the export: patches.Apply
// patches a hardlink copy, then each file the patches touched replaces the
// export's (patch writes new files, so the copy's others are the export's
// own). It returns the marker and the files the patches created.
func (b *builder) patchInPlace(ctx context.Context, dir string) (*patchedMarker, []string, error) {
	b.report(PhasePatch, 0, "")
	series := b.in.patchSeries()
	tmp := filepath.Join(b.layout.srcDir(), ".tmp-patch-"+b.spec.Name)
	if err := os.RemoveAll(tmp); err != nil {
		return nil, nil, fmt.Errorf("failed to remove %s: %w", tmp, err)
	}
	defer os.RemoveAll(tmp)
	results, err := patches.Apply(ctx, series, dir, tmp)
	if err != nil {
		var ae *patches.ApplyError
		if errors.As(err, &ae) {
			return nil, nil, &PatchError{Spec: b.spec.Name, Results: ae.Results, Err: err}
		}
		return nil, nil, err
	}
	m := &patchedMarker{Series: series.Hash()}
	var created []string
	for _, res := range results {
		m.Files = append(m.Files, res.Files...)
		m.Results = append(m.Results, res.String())
		for _, f := range res.Files {
			isNew, err := linkPatched(filepath.Join(tmp, f), filepath.Join(dir, f))
			if err != nil {
				return nil, nil, err
			}
			if isNew {
				created = append(created, f)
			}
		}
	}
	return m, created, nil
}

// linkPatched makes dst the patched file src (a hardlink), or removes dst
// when the patch deleted src; isNew says dst did not exist before.
func linkPatched(src, dst string) (isNew bool, err error) {
	_, err = os.Lstat(dst)
	isNew = errors.Is(err, fs.ErrNotExist)
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("failed to remove %s: %w", dst, err)
		}
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, fmt.Errorf("failed to create %s: %w", filepath.Dir(dst), err)
	}
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("failed to replace %s: %w", dst, err)
	}
	if err := os.Link(src, dst); err != nil {
		return false, fmt.Errorf("failed to replace %s: %w", dst, err)
	}
	return isNew, nil
}

// readExportState reads an export's state file.
func readExportState(path string) (exportState, error) {
	var st exportState
	data, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("failed to parse %s: %w", path, err)
	}
	return st, nil
}
