package kernels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// collector is the state of one GC run.
type collector struct {
	l      layout
	dryRun bool
	// names holds the spec names in use.
	names map[string]bool
	// keep holds the artifact dir names to keep.
	keep map[string]bool
	// currentSrc maps a spec to its current patched source dir name, "" when it has no patches.
	currentSrc map[string]string
	// gone holds the artifact dir names removed (or, dry-running, to be removed).
	gone    map[string]bool
	removed []Removal
	freed   int64
}

// current keeps the artifact each spec's current inputs map to.
func (g *collector) current(ctx context.Context, specs []*Spec) {
	for _, s := range specs {
		in, err := resolveInputs(ctx, g.l, s)
		if err != nil {
			continue // e.g. a missing tarball: the newest index entry still counts
		}
		if a, ok := lookupIndex(g.l, in.hash()); ok {
			g.keep[filepath.Base(a.Dir)] = true
		}
		g.currentSrc[s.Name] = ""
		if in.hasPatches() {
			g.currentSrc[s.Name] = filepath.Base(g.l.sourceDir(s, in))
		}
	}
}

// indexRef is one index entry on disk.
type indexRef struct {
	path     string
	artifact string
	mtime    time.Time
}

// readIndex returns the index entries, newest first.
func (g *collector) readIndex() []indexRef {
	files, _ := filepath.Glob(filepath.Join(g.l.indexDir(), "*.json"))
	var refs []indexRef
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		data, err := os.ReadFile(f)
		var e indexEntry
		if err != nil || json.Unmarshal(data, &e) != nil {
			e = indexEntry{}
		}
		refs = append(refs, indexRef{path: f, artifact: e.Artifact, mtime: fi.ModTime()})
	}
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].mtime.After(refs[j].mtime) })
	return refs
}

// newest keeps the artifacts of the keep newest index entries of each spec in use.
func (g *collector) newest(keep int) {
	perSpec := map[string]int{}
	seen := map[string]bool{}
	for _, r := range g.readIndex() {
		if r.artifact == "" || seen[r.artifact] {
			continue
		}
		seen[r.artifact] = true
		if _, err := loadArtifact(filepath.Join(g.l.kernelsDir(), r.artifact)); err != nil {
			continue
		}
		spec := artifactSpec(g.l, r.artifact)
		if !g.inUse(spec) || perSpec[spec] >= keep {
			continue
		}
		g.keep[r.artifact] = true
		perSpec[spec]++
	}
}

// artifactKeyRe matches the "-<key16>" suffix of an artifact dir name.
var artifactKeyRe = regexp.MustCompile(`-[0-9a-f]{16}$`)

// artifactSpec names the spec an artifact dir belongs to: from its build.json, else its name.
func artifactSpec(l layout, name string) string {
	if a, err := loadArtifact(filepath.Join(l.kernelsDir(), name)); err == nil && a.Info.Spec != "" {
		return a.Info.Spec
	}
	return artifactKeyRe.ReplaceAllString(name, "")
}

// artifacts removes artifact dirs not kept and not held (see Hold), and
// temp dirs of interrupted publishes. A removed artifact's bzImage stays
// locked until the step ends, so that no Hold starts on it meanwhile.
func (g *collector) artifacts() error {
	var unlocks []func()
	defer func() {
		for _, u := range unlocks {
			u()
		}
	}()
	return g.each(g.l.kernelsDir(), func(name string) string {
		spec := artifactSpec(g.l, name)
		why := ""
		switch {
		case strings.HasPrefix(name, ".tmp-"):
			return "leftover of an interrupted build"
		case g.keep[name]:
			return ""
		case !g.inUse(spec):
			why = fmt.Sprintf("artifact of spec %s, which no longer exists", spec)
		default:
			why = fmt.Sprintf("artifact of spec %s, superseded by newer builds", spec)
		}
		unlock, ok := tryUnheld(filepath.Join(g.l.kernelsDir(), name, bzImageFile))
		if !ok {
			return "" // a run boots it
		}
		unlocks = append(unlocks, unlock)
		g.gone[name] = true
		return why
	})
}

// index removes index entries whose artifact is gone or being removed.
func (g *collector) index() error {
	for _, r := range g.readIndex() {
		if r.artifact != "" && r.artifact == filepath.Base(r.artifact) && !g.gone[r.artifact] {
			if _, err := os.Stat(filepath.Join(g.l.kernelsDir(), r.artifact, buildInfoFile)); err == nil {
				continue
			}
		}
		if err := g.remove(r.path, "index entry of a removed artifact"); err != nil {
			return err
		}
	}
	return nil
}

// workDirs removes the work dirs of specs not in use and seeding leftovers.
func (g *collector) workDirs() error {
	return g.each(filepath.Join(g.l.root, "work"), func(name string) string {
		switch {
		case strings.HasPrefix(name, ".tmp-"):
			return "leftover of an interrupted build"
		case !g.inUse(name):
			return fmt.Sprintf("work dir of spec %s, which no longer exists", name)
		}
		return ""
	})
}

// ccaches removes the ccaches of specs not in use, and the one ccache all
// specs shared before each build had its own.
func (g *collector) ccaches() error {
	if _, err := os.Stat(filepath.Join(g.l.root, "ccache")); err == nil {
		if err := g.remove(filepath.Join(g.l.root, "ccache"), "the ccache all specs shared (each spec has its own now)"); err != nil {
			return err
		}
	}
	return g.each(filepath.Join(g.l.root, "ccaches"), func(name string) string {
		if !g.inUse(name) {
			return fmt.Sprintf("ccache of spec %s, which no longer exists", name)
		}
		return ""
	})
}

// leftoverSrcRe matches temp dirs of interrupted extractions and patch runs.
var leftoverSrcRe = regexp.MustCompile(`^(\.tmp-|\..+\.tmp-)`)

// sources removes patched source copies of specs not in use or of older
// series; pristine extractions (no patched stamp) stay.
func (g *collector) sources() error {
	return g.each(g.l.srcDir(), func(name string) string {
		if leftoverSrcRe.MatchString(name) {
			return "leftover of an interrupted build"
		}
		if _, err := os.Stat(filepath.Join(g.l.srcDir(), name, patchedStamp)); err != nil {
			return ""
		}
		i := strings.LastIndexByte(name, '-')
		if i <= 0 {
			return ""
		}
		spec := name[:i]
		if !g.inUse(spec) {
			return fmt.Sprintf("patched source of spec %s, which no longer exists", spec)
		}
		switch cur, ok := g.currentSrc[spec]; {
		case ok && cur == "":
			return fmt.Sprintf("patched source of spec %s, which has no patches now", spec)
		case ok && cur != name:
			return fmt.Sprintf("patched source of an older patch series of %s", spec)
		}
		return ""
	})
}

// each calls why for every entry of dir and removes those it gives a reason for.
func (g *collector) each(dir string, why func(name string) string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", dir, err)
	}
	for _, e := range entries {
		if reason := why(e.Name()); reason != "" {
			if err := g.remove(filepath.Join(dir, e.Name()), reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// remove records and (unless dry-running) removes path.
func (g *collector) remove(path, why string) error {
	n := diskUsage(path)
	if !g.dryRun {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("failed to remove %s: %w", path, err)
		}
	}
	g.removed = append(g.removed, Removal{Path: path, Bytes: n, Why: why})
	g.freed += n
	return nil
}

// diskUsage sums the disk blocks of everything under path that removing it
// frees: files with other hard links (a patched copy's untouched files) do not count.
func diskUsage(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		if d.IsDir() || st.Nlink == 1 {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// inUse says whether a spec name is in use: one of the specs given, or the
// flavour of one ("stock-6.1.debug.kselftest-net", see Flavoured).
func (g *collector) inUse(name string) bool {
	return g.names[name] || g.names[specOf(name)]
}

// temps removes scratch folders and files left by killed processes: those
// named by TempPattern whose owner is gone, in the cache's selftests,
// images, src and debs folders and in os.TempDir(); and unowned "selftests/.tmp-*"
// and "images/.debootstrap-*" of older versions when no build holds the
// lock of their folder.
func (g *collector) temps() error {
	for _, dir := range []string{filepath.Join(g.l.root, "selftests"), filepath.Join(g.l.root, "images"), g.l.srcDir(), g.l.debsDir()} {
		err := g.each(dir, func(name string) string {
			if strings.HasPrefix(name, ".") && OwnerGone(name) {
				return "leftover of " + describePid(name) + ", which is gone"
			}
			return ""
		})
		if err != nil {
			return err
		}
	}
	for dir, prefix := range map[string]string{"selftests": ".tmp-", "images": ".debootstrap-"} {
		dir = filepath.Join(g.l.root, dir)
		unlock, ok := tryLock(filepath.Join(dir, "lock"))
		if !ok {
			continue
		}
		err := g.each(dir, func(name string) string {
			if strings.HasPrefix(name, prefix) && !ownerRe.MatchString(name) {
				return "leftover of an interrupted build"
			}
			return ""
		})
		unlock()
		if err != nil {
			return err
		}
	}
	return g.each(os.TempDir(), func(name string) string {
		if strings.HasPrefix(name, "napilab-") && OwnerGone(name) {
			return "leftover of " + describePid(name) + ", which is gone"
		}
		return ""
	})
}

// tryLock takes the exclusive flock on path without waiting; ok is false
// when someone holds it.
func tryLock(path string) (unlock func(), ok bool) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

// tryUnheld takes the exclusive flock on an existing file without waiting;
// ok is false when someone holds it. A missing file holds nothing.
func tryUnheld(path string) (unlock func(), ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return func() {}, errors.Is(err, fs.ErrNotExist)
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

// notes removes holder notes of processes that are gone (see lock.go);
// GC holds the cache lock, so no key is held by a live build anyway.
func (g *collector) notes() error {
	for _, dir := range []string{g.l.locksDir(), g.l.root} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.holder"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			var h holderNote
			if err == nil && json.Unmarshal(data, &h) == nil && h.alive() {
				continue
			}
			if err := g.remove(f, "lock note of a process that is gone"); err != nil {
				return err
			}
		}
	}
	return nil
}
