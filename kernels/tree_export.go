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
//	trees/export/<name>.json    what it holds (exportState); while it changes,
//	                            only the files to remove should the change fail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"napilab/internal/safefs"
	"napilab/patches"
)

// exportState records what an export holds.
type exportState struct {
	// Tree is the git tree id exported.
	Tree string `json:"tree"`
	// Series is the hash of the patches applied on top, "" for none.
	Series string `json:"series,omitempty"`
	// Created are the folders and files the patches added (not in Tree),
	// parents first, removed before the next export.
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
	// Not trusted from here until the new state is written: meanwhile the
	// stamp says only which files to remove, should this export fail.
	if err := writeJSON(stamp, exportState{Created: got.Created}); err != nil {
		return "", nil, err
	}
	if err := removeCreated(dir, got.Created); err != nil {
		// Start afresh rather than trust a folder that cannot be cleaned.
		if err := os.Remove(index); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("failed to remove %s: %w", index, err)
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
		if st.Marker, st.Created, err = b.patchInPlace(ctx, dir, stamp); err != nil {
			return "", nil, err
		}
	}
	if err := writeJSON(stamp, st); err != nil {
		return "", nil, err
	}
	return dir, st.Marker, nil
}

// patchInPlace applies the spec's series to the export: patches.Apply
// patches a hardlink copy, then each file the patches name (as the diff
// gives it, checked by patches; never a name from patch's output) is
// brought over to the export by syncPatched. It returns the marker and the
// files and folders the patches created, which stamp lists (as a pending
// state) before the export is touched.
func (b *builder) patchInPlace(ctx context.Context, dir, stamp string) (*patchedMarker, []string, error) {
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
	var files []string
	by := map[string]patches.Patch{}
	for _, res := range results {
		m.Files = append(m.Files, res.Files...)
		m.Results = append(m.Results, res.String())
		for _, f := range res.Files {
			if _, ok := by[f]; !ok {
				by[f] = res.Patch
				files = append(files, f)
			}
		}
	}
	created, err := syncPatched(tmp, dir, files, func(created []string) error {
		return writeJSON(stamp, exportState{Created: created})
	})
	var fe *fileError
	if errors.As(err, &fe) {
		p := by[fe.name]
		return nil, nil, fmt.Errorf("failed to apply patch %d (%s) of %s to %s: %w", p.Index, p.Subject, p.File, dir, err)
	}
	if err != nil {
		return nil, nil, err
	}
	return m, created, nil
}

// fileError is a failure to bring one patched file over to the export.
type fileError struct {
	name string
	err  error
}

func (e *fileError) Error() string { return fmt.Sprintf("%s: %v", e.name, e.err) }
func (e *fileError) Unwrap() error { return e.err }

// testHookLinked, when set, runs after each file syncPatched links.
var testHookLinked func(name string)

// syncPatched makes each of files in dst what it is in the patched copy
// src: a hard link to src's file, or absent where a patch deleted it;
// files the same in both (one inode) are left alone. Every name is checked
// (patches.CheckName) and looked up beneath both folders without following
// a symlink: one anywhere on the way is an error, never a write elsewhere.
// Before dst is touched, record is given the files and folders that will be
// created, so that a failed sync is undone by the next export; syncPatched
// returns them.
func syncPatched(src, dst string, files []string, record func(created []string) error) ([]string, error) {
	from, err := safefs.OpenDir(src)
	if err != nil {
		return nil, fmt.Errorf("failed to open patched copy: %w", err)
	}
	defer from.Close()
	to, err := safefs.OpenDir(dst)
	if err != nil {
		return nil, fmt.Errorf("failed to open export: %w", err)
	}
	defer to.Close()
	var remove, link, dirs, created []string
	newDir := map[string]bool{}
	for _, f := range files {
		if err := patches.CheckName(f); err != nil {
			return nil, &fileError{f, fmt.Errorf("refused file name: %w", err)}
		}
		pst, err := lstat(from, f) // patched
		if err != nil {
			return nil, &fileError{f, err}
		}
		est, err := lstat(to, f) // exported
		if err != nil {
			return nil, &fileError{f, err}
		}
		switch {
		case pst == nil && est == nil:
		case pst != nil && est != nil && pst.Dev == est.Dev && pst.Ino == est.Ino:
		case pst != nil && isDir(pst) && est != nil && isDir(est):
		case est != nil && isDir(est):
			return nil, &fileError{f, errors.New("the export holds a folder there, want a file")}
		case pst == nil:
			remove = append(remove, f)
		case pst.Mode&unix.S_IFMT != unix.S_IFREG:
			return nil, &fileError{f, fmt.Errorf("the patches left a file of mode %#o there, want a regular file (symlinks are not applied)", pst.Mode)}
		default:
			link = append(link, f)
			if est != nil {
				continue
			}
			created = append(created, f)
			for i := range f {
				if f[i] != '/' || newDir[f[:i]] {
					continue
				}
				st, err := lstat(to, f[:i])
				if err != nil {
					return nil, &fileError{f, err}
				}
				if st == nil {
					newDir[f[:i]] = true
					dirs = append(dirs, f[:i])
				}
			}
		}
	}
	if err := record(append(slices.Clone(dirs), created...)); err != nil {
		return nil, err
	}
	for _, f := range remove {
		if err := to.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, &fileError{f, err}
		}
	}
	for _, d := range dirs {
		if err := to.Mkdir(d, 0o755); err != nil {
			return nil, &fileError{d, err}
		}
	}
	for _, f := range link {
		if err := to.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, &fileError{f, err}
		}
		if err := safefs.Link(from, f, to, f); err != nil {
			return nil, &fileError{f, err}
		}
		if testHookLinked != nil {
			testHookLinked(f)
		}
	}
	return append(dirs, created...), nil
}

// lstat is Dir.Lstat with nil, nil for a name that does not exist.
func lstat(d *safefs.Dir, rel string) (*unix.Stat_t, error) {
	st, err := d.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return st, err
}

func isDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// removeCreated removes, beneath dir and without following symlinks, the
// files and then the folders a previous export's patches created (names
// as recorded, folders before the files in them). A folder that is not
// empty is left.
func removeCreated(dir string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	d, err := safefs.OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to open export: %w", err)
	}
	defer d.Close()
	for _, f := range slices.Backward(names) {
		if err := patches.CheckName(f); err != nil {
			return fmt.Errorf("failed to remove %q: refused file name: %w", f, err)
		}
		st, err := lstat(d, f)
		if err != nil {
			return fmt.Errorf("failed to remove %s: %w", f, err)
		}
		switch {
		case st == nil:
		case isDir(st):
			if err := d.RemoveDir(f); err != nil && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("failed to remove %s: %w", f, err)
			}
		default:
			if err := d.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("failed to remove %s: %w", f, err)
			}
		}
	}
	return nil
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
