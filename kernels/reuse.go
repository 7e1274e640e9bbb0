package kernels

// Variants rebuild in seconds by starting from their base's build.
//
// A spec that extends another (its base) and builds the same tarball starts
// from a copy of the base's built work dir instead of an empty one, so make
// compiles only what the variant's patches and config change. Three things
// make that correct:
//
//   - Kbuild records ABSOLUTE paths: srctree in the command line and the
//     dependency list of every .cmd file, the work dir in tools/objtool's,
//     the generated Makefile and the source symlink. Building the copy from
//     the variant's own source and work paths would change every command
//     line and rebuild everything. So make's jail (sandbox.Start) shows the
//     variant's patched source at the base's source path and the variant's
//     work dir at the base's work dir: make sees exactly the paths of the
//     base build, with the variant's files behind them. The mounts live only
//     in the jail, which dies with make; no other process ever sees them,
//     and the base's own source and work dir are not in it.
//   - Make decides by mtime. Right after the copy, each file the variant's
//     patches touched gets the current time when its content differs from
//     the base's source (so exactly those objects and their dependents
//     rebuild, even when the patched copy is older than the base's build),
//     and the base file's mtime when it does not.
//   - The copy belongs to one patched source: the work dir carries a stamp
//     (reuseStamp) holding the plan. When the plan changes (another series,
//     other base paths, a newer base build) the copy is thrown away and
//     seeded again, because make cannot notice a dropped patch: the reverted
//     file is older than the object built from the patched one.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"napilab/internal/safefs"
	"napilab/internal/sandbox"
)

// reuseStamp is the file in a variant's work dir that records its reusePlan.
const reuseStamp = ".napilab-reuse.json"

// reusePlan says how a variant builds on top of its base's build.
type reusePlan struct {
	// Base is the base spec's name.
	Base string `json:"base"`
	// Source is the variant's source tree, shown at SourceAt.
	Source string `json:"source"`
	// SourceAt is the source path of the base's build.
	SourceAt string `json:"source_at"`
	// Work is the variant's work dir, shown at WorkAt.
	Work string `json:"work"`
	// WorkAt is the base's work dir.
	WorkAt string `json:"work_at"`
	// BaseBuild is the mtime (ns) of the base's vmlinux: when the base is
	// rebuilt, the variant starts again from the new build instead of
	// redoing the base's recompiles itself.
	BaseBuild int64 `json:"base_build_ns"`
	// BaseWork and BaseSource are the base's own work dir (copied) and
	// patched source (compared with). For a base that is itself a variant
	// they differ from WorkAt and SourceAt, the paths its build was shown
	// at (its base's, and so on down the chain): the variant is shown there too.
	BaseWork   string `json:"base_work"`
	BaseSource string `json:"base_source"`
}

// planReuse decides whether the variant can start from its base's build,
// building the base first when its work dir is not built. It runs before
// the cache lock is taken, because building the base takes it. A nil plan
// means a full build; the note then says why.
func (b *builder) planReuse(ctx context.Context) (*reusePlan, string, error) {
	if b.spec.Extends == "" {
		return nil, "", nil
	}
	if b.spec.Base.IsTree() {
		// The base's work dir may hold another state of the tree, older
		// than the variant's export: the variant builds in its own.
		return nil, "", nil
	}
	base, err := LoadSpec(b.spec.Extends)
	if err != nil {
		return nil, "", fmt.Errorf("failed to load base spec: %w", err)
	}
	// A flavour builds on the base's same flavour: the same config.
	base = base.Flavoured(b.spec.Flavour())
	if base.Name == b.spec.Name {
		return nil, fmt.Sprintf("base spec %s has the variant's name; full build", base.Path), nil
	}
	baseIn, err := resolveInputs(ctx, b.layout, base)
	if err != nil {
		return nil, "", fmt.Errorf("base %s: %w", base.Name, err)
	}
	if baseIn.tarSum != b.in.tarSum {
		return nil, fmt.Sprintf("base %s builds another tarball; full build", base.Name), nil
	}
	baseWork := b.layout.workDir(base.Name)
	if !workBuilt(baseWork) {
		opts := Options{CacheDir: b.layout.root, Jobs: b.jobs, Nice: b.nice, Progress: b.progress}
		if _, err := Build(ctx, base, opts); err != nil {
			return nil, "", fmt.Errorf("failed to build base %s: %w", base.Name, err)
		}
	}
	baseSrc := b.layout.sourceDir(base, baseIn)
	if !workBuilt(baseWork) {
		return nil, fmt.Sprintf("base %s has an artifact but no built work dir; full build", base.Name), nil
	}
	srcAt, workAt := baseSrc, baseWork
	if link, _ := os.Readlink(filepath.Join(baseWork, "source")); link != baseSrc {
		// A base that is a variant was built shown at its own base's paths.
		var bp reusePlan
		data, err := readBuildFile(baseWork, reuseStamp)
		if err != nil || json.Unmarshal(data, &bp) != nil || bp.SourceAt != link || bp.WorkAt == "" {
			return nil, fmt.Sprintf("base work dir %s was built from %q, not %s; full build", baseWork, link, baseSrc), nil
		}
		for _, at := range []string{bp.SourceAt, bp.WorkAt} {
			if fi, err := os.Stat(at); err != nil || !fi.IsDir() {
				return nil, fmt.Sprintf("base %s was built at %s, which is gone; full build", base.Name, at), nil
			}
		}
		srcAt, workAt = bp.SourceAt, bp.WorkAt
	}
	if _, err := os.Stat(filepath.Join(baseSrc, "Makefile")); err != nil {
		return nil, fmt.Sprintf("base source %s is gone; full build", baseSrc), nil
	}
	fi, err := os.Stat(filepath.Join(baseWork, "vmlinux"))
	if err != nil {
		return nil, fmt.Sprintf("base %s: %v; full build", base.Name, err), nil
	}
	if !sandbox.Active() {
		return nil, "a variant builds on its base's build only when lab runs as root (the jail shows it at the base's paths); full build", nil
	}
	plan := &reusePlan{Base: base.Name, SourceAt: srcAt, Work: b.layout.workDir(b.spec.Name), WorkAt: workAt,
		BaseBuild: fi.ModTime().UnixNano(), BaseWork: baseWork, BaseSource: baseSrc}
	return plan, "", nil
}

// workBuilt reports whether a work dir holds a finished build.
func workBuilt(work string) bool {
	for _, f := range []string{"vmlinux", "arch/x86/boot/bzImage"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			return false
		}
	}
	return true
}

// seed makes the variant's work dir a copy of the base's (cp -a keeps the
// mtimes make needs), unless it already is one for the same plan, and then
// dates the files the patches changed so that make rebuilds what they feed.
func (b *builder) seed(ctx context.Context, plan *reusePlan, marker *patchedMarker) error {
	var got reusePlan
	if data, err := readBuildFile(plan.Work, reuseStamp); err == nil &&
		json.Unmarshal(data, &got) == nil && got == *plan {
		return nil
	}
	b.report(PhaseSeed, 0, "")
	if err := os.RemoveAll(plan.Work); err != nil {
		return fmt.Errorf("failed to remove stale work dir: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(plan.Work), 0o755); err != nil {
		return fmt.Errorf("failed to create work dir: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(plan.Work), ".tmp-seed-")
	if err != nil {
		return fmt.Errorf("failed to create work dir: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if out, err := run(ctx, command{argv: []string{"cp", "-a", plan.BaseWork + "/.", tmp}}, nil); err != nil {
		return fmt.Errorf("failed to copy the work dir of %s: %w\n%s", plan.Base, err, strings.Join(out, "\n"))
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("failed to chmod work dir: %w", err)
	}
	if err := os.Remove(filepath.Join(tmp, reuseStamp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("failed to drop the base's reuse stamp: %w", err)
	}
	if err := touchChanged(plan, marker, time.Now()); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(tmp, reuseStamp), plan); err != nil {
		return err
	}
	if err := os.Rename(tmp, plan.Work); err != nil {
		return fmt.Errorf("failed to move work dir into place: %w", err)
	}
	return nil
}

// dropSeed removes a work dir seeded from a base when the variant now builds
// on its own: its objects were built for the base's paths.
func dropSeed(work string) error {
	if _, err := os.Stat(filepath.Join(work, reuseStamp)); err != nil {
		return nil
	}
	if err := os.RemoveAll(work); err != nil {
		return fmt.Errorf("failed to remove work dir seeded from a base: %w", err)
	}
	return nil
}

// touchChanged sets the mtime of each file the patches touched in
// plan.Source: now when it differs from the same file in plan.BaseSource, the
// base file's mtime when it does not. Files still hardlinked to the pristine
// tree (more than one link) were not patched and are never touched, so the
// pristine tree keeps its mtimes. Nothing below plan.Source is followed
// (the names come from a series).
func touchChanged(plan *reusePlan, marker *patchedMarker, now time.Time) error {
	if marker == nil {
		return nil
	}
	src, err := safefs.OpenDir(plan.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	files := slices.Clone(marker.Files)
	slices.Sort(files)
	for _, rel := range slices.Compact(files) {
		st, err := src.Lstat(rel)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // deleted by a patch
			}
			return fmt.Errorf("failed to stat %s: %w", rel, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
			continue
		}
		mtime := now
		if same, fi := sameFile(plan.Source, plan.BaseSource, rel); same {
			mtime = fi.ModTime()
		}
		if err := src.Chtimes(rel, mtime); err != nil {
			return fmt.Errorf("failed to date %s: %w", rel, err)
		}
	}
	return nil
}

// sameFile reports whether rel has the same content below folders a and
// b, with b's info; neither read follows a symlink.
func sameFile(a, b, rel string) (bool, os.FileInfo) {
	fi, err := os.Lstat(filepath.Join(b, rel))
	if err != nil || !fi.Mode().IsRegular() {
		return false, nil
	}
	da, err := safefs.ReadBeneathMax(a, rel, fi.Size())
	if err != nil || int64(len(da)) != fi.Size() {
		return false, nil
	}
	db, err := safefs.ReadBeneathMax(b, rel, fi.Size())
	if err != nil {
		return false, nil
	}
	return bytes.Equal(da, db), fi
}
