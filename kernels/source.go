package kernels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"napilab/patches"
)

// patchedStamp marks a patched source copy as complete; it holds a patchedMarker.
const patchedStamp = ".napilab-patched"

// patchedMarker is the content of patchedStamp.
type patchedMarker struct {
	// Series is the hash of the applied series.
	Series string `json:"series"`
	// Files are the files the patches touched, relative to the tree.
	Files []string `json:"files"`
	// Results has one line per patch: how it applied (offsets, fuzz).
	Results []string `json:"results"`
}

// sourceDir is the tree a spec builds from: the pristine extraction, or
// src/<name>-<patch12> when it has patches; for a tree or git base its
// export, src/<name>-tree. It does not create anything.
func (l layout) sourceDir(spec *Spec, in *inputs) string {
	if in.tree != nil {
		return l.exportDir(spec.Name)
	}
	if !in.hasPatches() {
		return l.pristineDir(spec.Base.Tarball, in.tarSum)
	}
	return filepath.Join(l.srcDir(), spec.Name+"-"+in.patchHash()[:12])
}

// prepareSource returns the tree to build: the pristine extraction, or a
// patched copy of it, and for a patched copy its marker.
func (b *builder) prepareSource(ctx context.Context) (string, *patchedMarker, error) {
	if b.in.tree != nil {
		return b.export(ctx)
	}
	pristine, err := b.extract(ctx)
	if err != nil || !b.in.hasPatches() {
		return pristine, nil, err
	}
	return b.patch(ctx, pristine)
}

// readySource returns the source tree when it is already published
// (extracted and, with patches, patched).
func (b *builder) readySource() (string, bool) {
	if b.in.tree != nil {
		dir, _, ok := b.readyExport()
		return dir, ok
	}
	dir := b.layout.pristineDir(b.spec.Base.Tarball, b.in.tarSum)
	if _, err := os.Stat(filepath.Join(dir, "Makefile")); err != nil {
		return "", false
	}
	if !b.in.hasPatches() {
		return dir, true
	}
	dir = b.layout.sourceDir(b.spec, b.in)
	if _, err := readMarker(dir); err != nil {
		return "", false
	}
	return dir, true
}

// extract unpacks the tarball once into src/<base>-<sha12>, atomically,
// under the tree's lock.
func (b *builder) extract(ctx context.Context) (string, error) {
	dir := b.layout.pristineDir(b.spec.Base.Tarball, b.in.tarSum)
	if _, err := os.Stat(filepath.Join(dir, "Makefile")); err == nil {
		return dir, nil
	}
	unlock, err := b.layout.lockKey(ctx, srcKey, filepath.Base(dir), "being extracted", false, b.waitReport)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "Makefile")); err == nil {
		return dir, nil // extracted while we waited
	}
	if _, err := os.Stat(dir); err == nil {
		return "", fmt.Errorf("failed to extract source: %s exists but has no Makefile; remove it", dir)
	}
	b.report(PhaseExtract, 0, "")
	if err := os.MkdirAll(b.layout.srcDir(), 0o755); err != nil {
		return "", fmt.Errorf("failed to create source dir: %w", err)
	}
	tmp, err := os.MkdirTemp(b.layout.srcDir(), ".tmp-extract-")
	if err != nil {
		return "", fmt.Errorf("failed to create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	tarball, err := filepath.Abs(b.spec.Base.Tarball)
	if err != nil {
		return "", fmt.Errorf("failed to resolve tarball: %w", err)
	}
	out, err := run(ctx, command{argv: []string{"tar", "-xf", tarball, "-C", tmp}}, nil)
	if err != nil {
		return "", fmt.Errorf("failed to extract %s: %w\n%s", tarball, err, strings.Join(out, "\n"))
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return "", fmt.Errorf("failed to read extracted tree: %w", err)
	}
	if len(entries) != 1 || !entries[0].IsDir() {
		return "", fmt.Errorf("failed to extract %s: want one top-level dir, got %d entries", tarball, len(entries))
	}
	if err := os.Rename(filepath.Join(tmp, entries[0].Name()), dir); err != nil {
		return "", fmt.Errorf("failed to move source into place: %w", err)
	}
	return dir, nil
}

// patch applies the spec's series to a hardlink copy of the pristine tree
// in src/<name>-<patch12> (patches.Apply publishes it only if every patch
// applied) and stamps it complete; a stamped copy is reused as it is.
func (b *builder) patch(ctx context.Context, pristine string) (string, *patchedMarker, error) {
	dir := b.layout.sourceDir(b.spec, b.in)
	if m, err := readMarker(dir); err == nil {
		return dir, m, nil
	}
	unlock, err := b.layout.lockKey(ctx, srcKey, filepath.Base(dir), "being patched", false, b.waitReport)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	if m, err := readMarker(dir); err == nil {
		return dir, m, nil // patched while we waited
	}
	b.report(PhasePatch, 0, "")
	// A dir without the stamp is a leftover of an interrupted publish.
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, fmt.Errorf("failed to remove stale patched source: %w", err)
	}
	series := b.in.patchSeries()
	results, err := patches.Apply(ctx, series, pristine, dir)
	if err != nil {
		var ae *patches.ApplyError
		if errors.As(err, &ae) {
			return "", nil, &PatchError{Spec: b.spec.Name, Results: ae.Results, Err: err}
		}
		return "", nil, err
	}
	m := &patchedMarker{Series: series.Hash()}
	for _, r := range results {
		m.Files = append(m.Files, r.Files...)
		m.Results = append(m.Results, r.String())
	}
	if err := writeJSON(filepath.Join(dir, patchedStamp), m); err != nil {
		return "", nil, err
	}
	return dir, m, nil
}

// readMarker reads the completion stamp of a patched source copy.
func readMarker(dir string) (*patchedMarker, error) {
	data, err := os.ReadFile(filepath.Join(dir, patchedStamp))
	if err != nil {
		return nil, err
	}
	var m patchedMarker
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", filepath.Join(dir, patchedStamp), err)
	}
	return &m, nil
}
