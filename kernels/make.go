package kernels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"napilab/kernels/sandbox"
)

// maker runs make for one build against one source tree and work dir.
type maker struct {
	b    *builder
	src  string
	work string
	// plan, when set, runs make at the base's paths with src and work mounted over them.
	plan    *reusePlan
	log     io.Writer
	logPath string
}

// ccacheMode is ccache's depend mode: a result's key comes from the
// compiler's own dependency list (Kbuild's -Wp,-MMD) instead of a second
// preprocessor run per file. That run made every miss 11-63 % slower than
// plain gcc on 6.1's net/core/dev.c, kernel/sched/core.c, mm/page_alloc.c
// and net/ipv4/tcp.c (a cold build is all misses); in depend mode a miss
// costs what gcc does (+0-3 %) and a rebuild of unchanged inputs still hits.
// What it gives up: a hit for a file whose headers changed but whose
// preprocessed text did not (a flavour's other autoconf.h).
const ccacheMode = "CCACHE_DEPEND=1"

// make runs `make -C <src> O=<work> ARCH=x86_64 CC=<cc> [-jN] <target>`; for
// a variant reusing its base's build, at the base's paths inside a mount
// namespace where src and work are bind-mounted over them (see reuse.go).
func (m *maker) make(ctx context.Context, target string, jobs int, onLine func(string)) error {
	src, work := m.src, m.work
	if m.plan != nil {
		src, work = m.plan.SourceAt, m.plan.WorkAt
	}
	argv := []string{"make", "-C", src, "O=" + work, "ARCH=x86_64", "CC=" + m.b.in.cc()}
	if jobs > 0 {
		argv = append(argv, fmt.Sprintf("-j%d", jobs))
	}
	argv = append(argv, target)
	if m.plan != nil {
		argv = m.plan.wrap(argv)
	}
	fmt.Fprintf(m.log, "$ %s\n", strings.Join(argv, " "))
	env := append(os.Environ(), "CCACHE_DIR="+m.b.layout.ccacheDir(), ccacheMode)
	c := command{argv: argv, env: env, log: m.log, jail: []string{m.b.layout.root}, nice: m.b.nice}
	return runMake(ctx, c, target, m.logPath, onLine)
}

// configure produces the final .config: base target, fragment merge,
// olddefconfig, then a check that every fragment setting held.
func (m *maker) configure(ctx context.Context) ([]byte, error) {
	m.b.report(PhaseConfig, 0, "")
	if err := m.make(ctx, m.b.spec.Config.Base, 0, nil); err != nil {
		return nil, err
	}
	dotconfig := filepath.Join(m.work, ".config")
	data, err := sandbox.ReadBeneath(m.work, ".config")
	if err != nil {
		return nil, fmt.Errorf("failed to read .config: %w", err)
	}
	frags := m.b.in.fragments
	extra, err := selftestFragments(m.src, m.b.spec.Config.Selftests)
	if err != nil {
		return nil, err
	}
	frags = append(frags[:len(frags):len(frags)], extra...)
	debug, err := debugFragments(m.b.spec.Config.Debug)
	if err != nil {
		return nil, err
	}
	frags = append(frags, debug...)
	if err := sandbox.WriteBeneath(m.work, ".config", MergeConfig(data, frags), 0o644); err != nil {
		return nil, fmt.Errorf("failed to write .config: %w", err)
	}
	if err := m.make(ctx, "olddefconfig", 0, nil); err != nil {
		return nil, err
	}
	final, err := sandbox.ReadBeneath(m.work, ".config")
	if err != nil {
		return nil, fmt.Errorf("failed to read .config: %w", err)
	}
	unmet, err := VerifyConfig(final, frags)
	for _, u := range unmet {
		m.b.unmet = append(m.b.unmet, u.String())
	}
	if err != nil {
		var cm *ConfigMismatchError
		if errors.As(err, &cm) {
			cm.Config = dotconfig
		}
		return nil, err
	}
	return final, nil
}

// compile runs make bzImage, reporting progress per output line.
func (m *maker) compile(ctx context.Context) (int, error) {
	counter := progressCounter{phase: PhaseCompile}
	m.b.total = estimateObjects(m.b.layout, m.b.spec, m.work)
	m.b.report(PhaseCompile, 0, "")
	err := m.make(ctx, "bzImage", m.b.jobs, func(line string) {
		counter.feed(line)
		m.b.report(counter.phase, counter.objects, line)
	})
	return counter.objects, err
}

// publish copies the build outputs into a temp dir and renames it to dir.
func (b *builder) publish(dir, key, work string, final []byte, objects int) (*Artifact, error) {
	if err := os.MkdirAll(b.layout.kernelsDir(), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create kernels dir: %w", err)
	}
	tmp, err := os.MkdirTemp(b.layout.kernelsDir(), ".tmp-")
	if err != nil {
		return nil, fmt.Errorf("failed to create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	// make wrote work sandboxed: no symlink out of it is followed.
	image, err := sandbox.ReadBeneath(work, filepath.Join("arch", "x86", "boot", "bzImage"))
	if err != nil {
		return nil, fmt.Errorf("failed to read bzImage: %w", err)
	}
	info := BuildInfo{Spec: b.spec.Name, Key: key, Base: b.spec.Base.Tarball, BaseSHA256: b.in.tarSum,
		Patches: append([]string{}, b.spec.Patches...), Compiler: b.in.compiler, CC: b.in.cc(),
		Seconds: time.Since(b.start).Seconds(), Date: time.Now().UTC(), BzImageSize: int64(len(image)),
		BzImageSHA256: sumBytes(image),
		Objects:       objects}
	notes := b.notes
	if !b.in.ccache {
		notes = append(notes, "ccache not found on PATH; built with CC=gcc")
	}
	info.Note = strings.Join(notes, "; ")
	info.Unmet = b.unmet
	info.Selftests = b.spec.Config.Selftests
	info.Debug = b.spec.Config.Debug
	if b.in.tree != nil {
		info.Base, info.Source = b.in.tree.Dir, b.in.tree
	}
	if b.plan != nil {
		info.Reuses = b.plan.Base
	}
	if b.marker != nil {
		info.PatchResults = b.marker.Results
	}
	if err := writeSynced(filepath.Join(tmp, bzImageFile), image); err != nil {
		return nil, fmt.Errorf("failed to write bzImage: %w", err)
	}
	if err := writeSynced(filepath.Join(tmp, configFile), final); err != nil {
		return nil, fmt.Errorf("failed to write config: %w", err)
	}
	if err := writeJSON(filepath.Join(tmp, buildInfoFile), info); err != nil {
		return nil, err
	}
	// What a userspace needs to see the built-in "modules" (modprobe of a
	// built-in succeeds once depmod has read modules.builtin), and the
	// vmlinux a PVH boot loads.
	for dst, src := range map[string]string{BuiltinFile: "modules.builtin", BuiltinModinfoFile: "modules.builtin.modinfo",
		ReleaseFile: "include/config/kernel.release", VmlinuxFile: "vmlinux"} {
		if data, err := sandbox.ReadBeneath(work, src); err == nil {
			if err := writeSynced(filepath.Join(tmp, dst), data); err != nil {
				return nil, err
			}
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("failed to chmod artifact: %w", err)
	}
	// Under the lock, an existing dir here lacks build.json: a leftover, not a hit.
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("failed to remove stale artifact: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("failed to publish artifact: %w", err)
	}
	if err := SyncDir(b.layout.kernelsDir()); err != nil {
		return nil, fmt.Errorf("failed to publish artifact: %w", err)
	}
	return newArtifact(dir, info), nil
}
