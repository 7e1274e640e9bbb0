package kernels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"napilab/internal/safefs"
	"napilab/internal/sandbox"
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

// make runs `make -C <src> O=<work> ARCH=x86_64 CC=<cc> [-jN] <target>` in
// the build's jail, which holds the source read-only and the work dir and
// the spec's own ccache writable, nothing of another spec (buildJail); for
// a variant reusing its base's build, the jail shows src and work at the
// base's paths (see reuse.go).
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
	fmt.Fprintf(m.log, "$ %s\n", strings.Join(argv, " "))
	ccache := m.b.layout.ccacheDir(m.b.spec.Name)
	env := append(os.Environ(), "CCACHE_DIR="+ccache, ccacheMode, "HOME=/nonexistent")
	c := command{argv: argv, env: env, log: m.log, jail: m.b.jail(m.src, m.work), nice: m.b.nice}
	return runMake(ctx, c, target, m.logPath, onLine)
}

// jail is what the build's make sees of the cache: its source read-only,
// its work dir and its own ccache writable (one spec's build cannot poison
// another's objects or cache entries), at the base's paths for a variant
// reusing its base's build.
func (b *builder) jail(src, work string) []sandbox.Mount {
	ms := sandbox.Writable(b.layout.ccacheDir(b.spec.Name))
	if b.plan != nil {
		return append(ms, sandbox.Mount{At: b.plan.SourceAt, From: src}, sandbox.Mount{At: b.plan.WorkAt, From: work, Write: true})
	}
	return append(ms, sandbox.Mount{At: src}, sandbox.Mount{At: work, Write: true})
}

// configure produces the final .config: base target, fragment merge,
// olddefconfig, then a check that every fragment setting held.
func (m *maker) configure(ctx context.Context) ([]byte, error) {
	m.b.report(PhaseConfig, 0, "")
	if err := m.make(ctx, m.b.spec.Config.Base, 0, nil); err != nil {
		return nil, err
	}
	dotconfig := filepath.Join(m.work, ".config")
	data, err := readBuildFile(m.work, ".config")
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
	if err := safefs.WriteBeneath(m.work, ".config", MergeConfig(data, frags), 0o644); err != nil {
		return nil, fmt.Errorf("failed to write .config: %w", err)
	}
	if err := m.make(ctx, "olddefconfig", 0, nil); err != nil {
		return nil, err
	}
	final, err := readBuildFile(m.work, ".config")
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
