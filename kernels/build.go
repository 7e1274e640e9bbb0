package kernels

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"napilab/internal/safefs"
	"napilab/internal/sandbox"
)

// Options tune Build; the zero value is usable.
type Options struct {
	// CacheDir is the cache root; empty means DefaultCacheDir().
	CacheDir string
	// Jobs is make's -j; zero means the number of CPUs.
	Jobs int
	// Progress, if set, receives progress reports from the calling goroutine.
	Progress func(Progress)
	// CacheOnly makes Build return ErrNotCached instead of building (lab
	// repro: a recorded kernel is used, not rebuilt from changed inputs).
	CacheOnly bool
	// Nice, when above 0, runs make and its children at that niceness, so
	// that work beside the build (lab run's guests) keeps the CPU.
	Nice int
}

// Artifact is a built kernel, published under <root>/kernels.
type Artifact struct {
	// Dir is the artifact dir.
	Dir string
	// BzImage is the path of the kernel image.
	BzImage string
	// Config is the path of the final .config.
	Config string
	// Key is the cache key (sha256 of tarball, patches, .config, compiler).
	Key string
	// Cached is true when Build did not run make bzImage.
	Cached bool
	// Info is the artifact's build.json.
	Info BuildInfo
}

// BuildInfo is the build record stored as build.json next to the bzImage.
type BuildInfo struct {
	// Spec is the spec name.
	Spec string `json:"spec"`
	// Key is the cache key.
	Key string `json:"key"`
	// Base is the source tarball path.
	Base string `json:"base"`
	// BaseSHA256 is the source tarball's sha256.
	BaseSHA256 string `json:"base_sha256"`
	// Patches are the applied patch files, in order.
	Patches []string `json:"patches"`
	// Compiler is the first line of `gcc --version`.
	Compiler string `json:"compiler"`
	// CC is the CC value passed to make.
	CC string `json:"cc"`
	// Note records anything unusual about the build, e.g. ccache missing.
	Note string `json:"note,omitempty"`
	// Seconds is the wall time of the build.
	Seconds float64 `json:"build_seconds"`
	// Date is when the build finished.
	Date time.Time `json:"date"`
	// BzImageSize is the bzImage size in bytes.
	BzImageSize int64 `json:"bzimage_size"`
	// BzImageSHA256 is the bzImage's sha256, checked on every reuse.
	BzImageSHA256 string `json:"bzimage_sha256,omitempty"`
	// Files are the size and sha256 of every artifact file the lab boots or
	// puts into an image, by name; checked before every use (artifact.go).
	Files map[string]FileSum `json:"files,omitempty"`
	// Objects counts the objects make compiled in this build.
	Objects int `json:"objects"`
	// Reuses names the base spec whose build this variant started from, if any.
	Reuses string `json:"reuses,omitempty"`
	// PatchResults says how each patch applied, one line per patch (offsets, fuzz).
	PatchResults []string `json:"patch_results,omitempty"`
	// Selftests names the kselftest collections whose config was merged.
	Selftests []string `json:"selftests,omitempty"`
	// Debug is set for the debug flavour (configs/sanitizers.config merged).
	Debug bool `json:"debug,omitempty"`
	// Unmet lists the collections' config settings the kernel does not have
	// (dependencies not met, module-only symbols): tests needing them skip or fail.
	Unmet []string `json:"unmet,omitempty"`
	// Source is the tree or git base's state built (commit, dirty tree id).
	Source *TreeState `json:"source,omitempty"`
}

// builder holds the state of one Build call.
type builder struct {
	spec     *Spec
	in       *inputs
	layout   layout
	jobs     int
	nice     int // Options.Nice
	progress func(Progress)
	start    time.Time
	// total is the compile's estimated object count, 0 when unknown.
	total int
	// plan, when set, makes this variant build on a copy of its base's build.
	plan *reusePlan
	// marker describes the patched source, when the spec has patches.
	marker *patchedMarker
	// notes record anything unusual, for BuildInfo.Note.
	notes []string
	// unmet lists advisory config settings lost to olddefconfig.
	unmet []string
}

// newBuilder fills in the option defaults and resolves the spec's inputs.
func newBuilder(ctx context.Context, spec *Spec, opts Options) (*builder, error) {
	b := &builder{spec: spec, layout: layout{opts.CacheDir}, jobs: opts.Jobs,
		nice: opts.Nice, progress: opts.Progress, start: time.Now()}
	if b.layout.root == "" {
		b.layout.root = DefaultCacheDir()
	}
	if b.jobs <= 0 {
		b.jobs = runtime.NumCPU()
	}
	if !opts.CacheOnly { // a base not installed is fetched once, here
		if err := resolveBase(ctx, b.layout, spec, true); err != nil {
			return nil, err
		}
	}
	var err error
	if b.in, err = resolveInputs(ctx, b.layout, spec); err != nil {
		return nil, err
	}
	return b, nil
}

// Build returns the kernel for spec, building it unless an artifact for the
// same inputs exists. A cache hit takes no lock and runs no make; a build
// holds its spec's lock throughout (lock.go), so builds of other specs run
// at once, and publishes atomically.
//
// A spec that extends another builds on its base's build (see reuse.go):
// the base is built first if its work dir is not, and the variant's make
// recompiles only what its patches and config change.
func Build(ctx context.Context, spec *Spec, opts Options) (*Artifact, error) {
	b, err := newBuilder(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	inputHash := b.in.hash()
	a, why := checkIndexed(b.layout, inputHash)
	if a != nil {
		return b.hit(a), nil
	}
	if opts.CacheOnly {
		return nil, fmt.Errorf("kernel %s: %w", spec.Name, ErrNotCached)
	}
	if why != "" {
		b.notes = append(b.notes, why+": rebuilt")
		b.report(PhaseConfig, 0, why+": rebuilding")
	}
	tools := buildTools
	if b.in.hasPatches() {
		tools = append(tools[:len(tools):len(tools)], "patch")
	}
	if err := checkTools(tools...); err != nil {
		return nil, err
	}
	plan, note, err := b.planReuse(ctx)
	if err != nil {
		return nil, err
	}
	b.plan = plan
	if note != "" {
		b.notes = append(b.notes, note)
	}
	unlock, err := b.lockBuild(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if a, _ := checkIndexed(b.layout, inputHash); a != nil {
		return b.hit(a), nil
	}
	a, err = b.build(ctx)
	if err != nil {
		return nil, err
	}
	if err := writeIndex(b.layout, inputHash, a); err != nil {
		return nil, err
	}
	return a, nil
}

// Source returns the source tree spec builds from, extracting the tarball
// and applying the spec's patches under the tree's lock if that has not been
// done yet. Callers must not modify the tree: other builds share it.
func Source(ctx context.Context, spec *Spec, opts Options) (string, error) {
	b, err := newBuilder(ctx, spec, opts)
	if err != nil {
		return "", err
	}
	if src, ok := b.readySource(); ok {
		return src, nil // published trees never change: no lock needed
	}
	unlock, err := b.layout.shareCache(ctx, b.waitReport)
	if err != nil {
		return "", err
	}
	defer unlock()
	src, _, err := b.prepareSource(ctx)
	return src, err
}

// build runs the slow path under the lock: source, config, compile, publish.
func (b *builder) build(ctx context.Context) (*Artifact, error) {
	src, marker, err := b.prepareSource(ctx)
	if err != nil {
		return nil, err
	}
	b.marker = marker
	work := b.layout.workDir(b.spec.Name)
	if err := b.claimWork(work); err != nil {
		return nil, err
	}
	if b.plan != nil {
		b.plan.Source = src
		if err := b.seed(ctx, b.plan, marker); err != nil {
			return nil, err
		}
	} else if err := dropSeed(work); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create work dir: %w", err)
	}
	ccache := b.layout.ccacheDir(b.spec.Name)
	if err := os.MkdirAll(ccache, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create ccache dir: %w", err)
	}
	// make runs sandboxed: it writes only the work dir and the spec's
	// ccache, which its uid must own (entries built before are root's).
	for _, d := range []string{work, ccache} {
		if err := sandbox.Own(d); err != nil {
			return nil, err
		}
	}
	logPath := filepath.Join(work, "build.log")
	log, err := safefs.CreateBeneath(work, "build.log", 0o644) // work is make's: no symlink followed
	if err != nil {
		return nil, fmt.Errorf("failed to create build log: %w", err)
	}
	defer log.Close()
	m := &maker{b: b, src: src, work: work, plan: b.plan, log: capLog(log, maxLogBytes), logPath: logPath}
	final, err := m.configure(ctx)
	if err != nil {
		return nil, err
	}
	key := b.in.key(final)
	dir := filepath.Join(b.layout.kernelsDir(), b.spec.Name+"-"+key[:16])
	if a, err := loadArtifact(dir); err == nil && a.checkSum() == nil {
		return b.hit(a), nil
	}
	objects, err := m.compile(ctx)
	if err != nil {
		return nil, err
	}
	a, err := b.publish(dir, key, work, final, objects)
	if err != nil {
		return nil, err
	}
	b.report(PhaseDone, objects, "")
	return a, nil
}

// domain names whose code may have run in a spec's work dir and ccache:
// its source (a tarball's sha256, or a tree's folder: every commit of a
// tree is one domain) and its patch series. A build's jail can write both,
// so they are trusted only by a later build of the same domain.
func (b *builder) domain() string {
	d := "tarball " + b.in.tarSum
	if b.in.tree != nil {
		d = "tree " + b.in.tree.Dir
	}
	if b.in.hasPatches() {
		d += " series " + b.in.patchSeries().Hash()
	}
	return d
}

// claimWork empties the spec's work dir and ccache when the last build in
// them was of another domain (another series: what it planted there, a
// newer object or a poisoned cache entry, must not reach this build), and
// records this one's, in a stamp the jail cannot reach, before make runs.
func (b *builder) claimWork(work string) error {
	stamp := filepath.Join(b.layout.stampsDir(), "work-"+b.spec.Name+".json")
	var got struct {
		Domain string `json:"domain"`
	}
	if data, err := os.ReadFile(stamp); err == nil && json.Unmarshal(data, &got) == nil && got.Domain == b.domain() {
		return nil
	}
	for _, d := range []string{work, b.layout.ccacheDir(b.spec.Name)} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("failed to empty %s for another patch series: %w", d, err)
		}
	}
	if err := os.MkdirAll(b.layout.stampsDir(), 0o755); err != nil {
		return err
	}
	return writeJSON(stamp, map[string]string{"domain": b.domain()})
}

// hit marks a as a cache hit and reports it done.
func (b *builder) hit(a *Artifact) *Artifact {
	a.Cached = true
	b.report(PhaseDone, 0, "")
	return a
}

// report sends a progress report if the caller asked for them.
func (b *builder) report(phase string, objects int, line string) {
	if b.progress != nil {
		b.progress(Progress{Spec: b.spec.Name, Phase: phase, Objects: objects, Total: b.total, Elapsed: time.Since(b.start), Line: line})
	}
}
