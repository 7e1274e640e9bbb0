package kernels

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"napilab/internal/safefs"
	"napilab/internal/sandbox"
)

// Selftests is an installed kselftest tree (make install's output) built
// from a kernel's own source: run_kselftest.sh, kselftest-list.txt and one
// folder per collection.
type Selftests struct {
	// Dir is the install dir.
	Dir string `json:"-"`
	// Collections are the TARGETS built, e.g. ["net"].
	Collections []string `json:"collections"`
	// Tests lists "collection:test" names from kselftest-list.txt.
	Tests []string `json:"tests"`
	// NotBuilt maps a program that failed to compile on the host to its first
	// error line; it is installed as a stub that exits with KSFT_SKIP (4).
	NotBuilt map[string]string `json:"not_built,omitempty"`
	// Added lists helper files the lab installed because an installed test
	// sources them but the collection's Makefile does not install them.
	Added []string `json:"added,omitempty"`
	// Seconds is the build's wall time.
	Seconds float64 `json:"build_seconds"`
	// Files is the sealed install (every folder, file and link but this
	// record), checked whenever the cached install is used.
	Files []sandbox.Entry `json:"files"`
	// Cached says the tree came from the cache.
	Cached bool `json:"-"`
}

// selftestsVersion versions the build recipe (it names the cache dir).
// 6: the install is sealed (root's, read-only) with a manifest.
const selftestsVersion = 6

// selftestsFile records a Selftests in its install dir, written last.
const selftestsFile = "selftests.json"

// Caps on what lab reads of a kselftest build.
const (
	// maxTestList bounds kselftest-list.txt (6.12's net lists ~250 tests).
	maxTestList = 1 << 20
	// maxSelftestsFile bounds selftests.json, a manifest of installLimits.
	maxSelftestsFile = 16 << 20
	// maxSourceFile bounds a file copied from the source into the install
	// (6.1's largest net script, fcnal-test.sh, is 113 KB).
	maxSourceFile = 4 << 20
	// maxSettings bounds a collection's settings file.
	maxSettings = 64 << 10
)

// installLimits bound a kselftest install: the Debian guest (1 GiB) holds
// it in RAM, and 6.1's net source folder is 3 MB with ~300 files.
var installLimits = sandbox.Limits{Bytes: 512 << 20, Entries: 20000, Depth: 32}

// Timeout is the per-test timeout of collection from its settings file (the
// kselftest runner's 45 s default when there is none).
func (s *Selftests) Timeout(collection string) time.Duration {
	data, err := safefs.ReadBeneathMax(s.Dir, filepath.Join(collection, "settings"), maxSettings)
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "timeout="); ok {
				if n, err := strconv.Atoi(v); err == nil && n > 0 {
					return time.Duration(n) * time.Second
				}
			}
		}
	}
	return 45 * time.Second
}

// BuildSelftests builds and installs the kselftests of spec's
// Config.Selftests collections from the kernel's (patched) source, with the
// uapi headers of that source, into the cache. make runs on an overlay of the
// source in a private mount namespace, so the shared tree stays pristine. Programs that do not compile on the host (a stable
// backport can break one) are replaced by stubs that skip with the error.
func BuildSelftests(ctx context.Context, spec *Spec, art *Artifact, opts Options) (*Selftests, error) {
	if len(spec.Config.Selftests) == 0 {
		return nil, fmt.Errorf("kernel %s names no kselftest collection", spec.Name)
	}
	l := layout{opts.CacheDir}
	if l.root == "" {
		l.root = DefaultCacheDir()
	}
	dir := filepath.Join(l.root, "selftests", fmt.Sprintf("%s-%s-v%d", spec.Name, art.Key[:16], selftestsVersion))
	if s, err := loadSelftests(dir); err == nil {
		s.Cached = true
		return s, nil
	}
	if err := checkTools("make", "gcc", "unshare", "mount", "rsync"); err != nil {
		return nil, err
	}
	// The cache lock keeps GC away from the source while make reads it;
	// the key's, another build of the same tests.
	wait := waitFunc(opts, spec.Name)
	release, err := l.shareCache(ctx, wait)
	if err != nil {
		return nil, err
	}
	defer release()
	src, err := Source(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	unlock, err := l.lockKey(ctx, selftestsKey, filepath.Base(dir), "being built", false, wait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, loadErr := loadSelftests(dir)
	if loadErr == nil {
		s.Cached = true
		return s, nil
	}
	start := time.Now()
	tmp, err := selftestTemp(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	logPath := dir + ".log"
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	if !errors.Is(loadErr, fs.ErrNotExist) {
		fmt.Fprintf(log, "the cached install is unusable, building anew: %v\n", loadErr)
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = 2
	}
	sb := &selftestBuild{src: src, out: filepath.Join(tmp, "build"), install: filepath.Join(tmp, "install"), overlay: filepath.Join(tmp, "overlay"),
		targets: strings.Join(selftestTargets(src, spec.Config.Selftests), " "), jobs: jobs, nice: opts.Nice, log: capLog(log, maxLogBytes), logPath: logPath,
	}
	sb.jail = sb.jailMounts()
	// make runs sandboxed: its uid must own the folders it writes (only
	// those: tmp itself stays lab's). It may create files anywhere in the
	// source (in the overlay's upper dir) but change none of it: the
	// overlay's folders are its (the upper dir holds all of them), the
	// files root's.
	owned := []string{sb.out, sb.install, filepath.Join(sb.overlay, "upper"), filepath.Join(sb.overlay, "work"), filepath.Join(tmp, "xdp-include")}
	for _, d := range owned {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := mirrorDirs(src, filepath.Join(sb.overlay, "upper")); err != nil {
		return nil, err
	}
	for _, d := range owned {
		if err := sandbox.Own(d); err != nil {
			return nil, err
		}
	}
	s = &Selftests{Collections: spec.Config.Selftests}
	if s.NotBuilt, err = sb.run(ctx); err != nil {
		return nil, err
	}
	if s.Added, err = sb.addSourced(); err != nil {
		return nil, err
	}
	if err := sb.finish(s); err != nil {
		return nil, err
	}
	s.Seconds = time.Since(start).Seconds()
	if err := publishSelftests(s, sb.install, dir); err != nil {
		return nil, err
	}
	return s, nil
}

// finish seals the install (every sandboxed command has exited: none can
// change it any more) and reads its tests from kselftest-list.txt.
func (sb *selftestBuild) finish(s *Selftests) error {
	files, err := sandbox.Seal(sb.install, installLimits)
	if err != nil {
		return fmt.Errorf("failed to seal the kselftest install (log: %s): %w", sb.logPath, err)
	}
	// The record is written last, in place of anything make left there.
	s.Files = slices.DeleteFunc(files, func(e sandbox.Entry) bool { return e.Name == selftestsFile })
	list, err := safefs.ReadBeneathMax(sb.install, "kselftest-list.txt", maxTestList)
	if err != nil {
		return fmt.Errorf("kselftest install wrote no kselftest-list.txt (log: %s): %w", sb.logPath, err)
	}
	if s.Tests, err = parseTestList(list, strings.Fields(sb.targets)); err != nil {
		return err
	}
	installed := map[string]bool{}
	for _, e := range files {
		installed[e.Name] = e.Type != "dir"
	}
	var missing []string
	for _, t := range s.Tests {
		coll, test, _ := strings.Cut(t, ":")
		if !installed[coll+"/"+test] {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kselftest install lacks %d listed tests, e.g. %s (log: %s)", len(missing), missing[0], sb.logPath)
	}
	return nil
}

// publishSelftests writes s into the sealed install, last, and renames the
// install to dir (a damaged copy there goes first), all synced.
func publishSelftests(s *Selftests, install, dir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to encode %s: %w", selftestsFile, err)
	}
	// Beneath: a link the sandboxed make left there is replaced, not followed.
	f, err := safefs.CreateBeneath(install, selftestsFile, 0o444)
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", selftestsFile, err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", selftestsFile, err)
	}
	if err := SyncDir(install); err != nil {
		return fmt.Errorf("failed to sync %s: %w", install, err)
	}
	// Under the key's lock, a dir here failed loadSelftests: not a hit.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to remove the damaged %s: %w", dir, err)
	}
	if err := os.Rename(install, dir); err != nil {
		return fmt.Errorf("failed to publish the kselftest install: %w", err)
	}
	if err := SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("failed to publish the kselftest install: %w", err)
	}
	s.Dir = dir
	return nil
}

// loadSelftests reads a cached install's record and checks the install
// against its manifest: a mismatch is a damaged cache entry.
func loadSelftests(dir string) (*Selftests, error) {
	data, err := safefs.ReadBeneathMax(dir, selftestsFile, maxSelftestsFile)
	if err != nil {
		return nil, err
	}
	var s Selftests
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("failed to read %s/%s: %w", dir, selftestsFile, err)
	}
	files, err := sandbox.Manifest(dir, installLimits)
	if err != nil {
		return nil, fmt.Errorf("kselftest install %s is damaged: %w", dir, err)
	}
	files = slices.DeleteFunc(files, func(e sandbox.Entry) bool { return e.Name == selftestsFile })
	if len(s.Files) == 0 {
		return nil, fmt.Errorf("kselftest install %s has no manifest in %s", dir, selftestsFile)
	}
	if i := firstDiff(s.Files, files); i >= 0 {
		what := "an entry is missing"
		if i < len(files) {
			what = files[i].Name + " differs"
		}
		return nil, fmt.Errorf("kselftest install %s is damaged: %s from its manifest", dir, what)
	}
	s.Dir = dir
	return &s, nil
}

// firstDiff is the index where a and b first differ, -1 if they do not.
func firstDiff(a, b []sandbox.Entry) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

// testNameRe matches the test half of a kselftest-list.txt line: lib.mk
// writes each test's base name ("veth.sh", "reuseport_bpf"); the scenarios
// package takes the same (scenarios.ValidKselftest).
var testNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]*$`)

// parseTestList reads kselftest-list.txt, which the sandboxed make wrote:
// "collection:test" lines, each collection one of targets. A test name
// becomes a path and a runner argument in the guest: no "/", "..", space,
// control character or shell metacharacter.
func parseTestList(list []byte, targets []string) ([]string, error) {
	var tests []string
	for i, line := range strings.Split(string(list), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		coll, test, _ := strings.Cut(line, ":")
		if !slices.Contains(targets, coll) || !testNameRe.MatchString(test) {
			return nil, fmt.Errorf("kselftest-list.txt:%d: bad test %q, want collection:test with a collection of %s and a test of [A-Za-z0-9_.+-]",
				i+1, line, strings.Join(targets, ", "))
		}
		tests = append(tests, line)
	}
	return tests, nil
}

// helperTargets are collections whose scripts others source (6.1's
// altnames.sh sources forwarding/lib.sh): built and installed along, their
// config fragments not merged.
var helperTargets = map[string][]string{"net": {"net/forwarding"}}

// selftestTemp creates the build's scratch folder in parent. The sandboxed
// make must pass through it (MkdirTemp makes it 0700): it stays lab's, but
// searchable.
func selftestTemp(parent string) (string, error) {
	tmp, err := os.MkdirTemp(parent, TempPattern(".tmp-"))
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// selftestTargets is the TARGETS list: the collections and their helpers
// that exist in src.
func selftestTargets(src string, colls []string) []string {
	out := slices.Clone(colls)
	for _, c := range colls {
		for _, h := range helperTargets[c] {
			if _, err := os.Stat(filepath.Join(src, "tools", "testing", "selftests", h, "Makefile")); err == nil && !slices.Contains(out, h) {
				out = append(out, h)
			}
		}
	}
	return out
}

var sourcedRe = regexp.MustCompile(`(?m)^\s*(?:source|\.)\s+(?:\./|"?\$\(dirname "?\$0"?\)"?/)?([A-Za-z0-9_.-]+\.sh)"?\s*$`)

// addSourced copies the helper scripts installed tests source from their
// own folder but the collection's Makefile left out (6.1's udpgro.sh sources
// net_helper.sh, which 6.1's net/Makefile does not install). The install
// folder is the sandboxed make's: no symlink there is followed.
func (sb *selftestBuild) addSourced() ([]string, error) {
	var added []string
	for _, t := range strings.Fields(sb.targets) {
		dir := filepath.Join(sb.install, t)
		scripts, _ := filepath.Glob(filepath.Join(dir, "*.sh"))
		for _, script := range scripts {
			if fi, err := os.Lstat(script); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				continue // its target is read where it lives, if in here
			}
			data, err := safefs.ReadBeneathMax(sb.install, filepath.Join(t, filepath.Base(script)), maxSourceFile)
			if err != nil {
				return nil, err
			}
			for _, m := range sourcedRe.FindAllSubmatch(data, -1) {
				name := string(m[1])
				if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
					continue
				}
				// The (patched) source's own links are followed only
				// inside it: a link to a root-only file is refused.
				body, err := safefs.ReadWithin(sb.src, filepath.Join("tools", "testing", "selftests", t, name), maxSourceFile)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("failed to read the helper %s sources: %w", filepath.Base(script), err)
				}
				if err := safefs.WriteBeneath(sb.install, filepath.Join(t, name), body, 0o755); err != nil {
					return nil, err
				}
				added = append(added, fmt.Sprintf("%s/%s (sourced by %s)", t, name, filepath.Base(script)))
			}
		}
	}
	return added, nil
}

// selftestBuild is one run of the kselftest make targets.
type selftestBuild struct {
	src, out, install string
	overlay           string // upper and work dirs of the overlay over src
	targets           string
	jobs              int
	nice              int // Options.Nice
	log               io.Writer
	logPath           string
	// jail is what the sandboxed commands see (see command.jail).
	jail []sandbox.Mount
}

// jailMounts is the jail of a selftest build: the source as an overlay
// (writes land in the overlay's upper dir), the build, install and
// xdp-include folders writable, nothing else of the cache.
func (sb *selftestBuild) jailMounts() []sandbox.Mount {
	tmp := filepath.Dir(sb.out)
	return append(sandbox.Writable(sb.out, sb.install, filepath.Join(tmp, "xdp-include")),
		sandbox.Mount{At: sb.src, Upper: filepath.Join(sb.overlay, "upper"), Work: filepath.Join(sb.overlay, "work")})
}

// maxStubRounds bounds the make -k / stub / make rounds.
const maxStubRounds = 4

// run installs the uapi headers, builds with make -k, stubs what failed
// and builds again, then installs. It returns the stubbed programs.
func (sb *selftestBuild) run(ctx context.Context) (map[string]string, error) {
	if _, err := sb.make(ctx, "-C", sb.src, "O="+sb.out, "ARCH=x86_64", "headers"); err != nil {
		return nil, fmt.Errorf("make headers failed (log: %s): %w", sb.logPath, err)
	}
	kself := filepath.Join(sb.src, "tools", "testing", "selftests")
	args := []string{"-C", kself, "O=" + sb.out, "ARCH=x86_64", "TARGETS=" + sb.targets}
	stubbed := map[string]string{}
	// The exit status is not enough: the top Makefile multiplies its
	// targets' statuses, so a failing net build followed by a good
	// net/forwarding one exits 0. Make's own error lines are read instead.
	for round := 0; ; round++ {
		out, err := sb.make(ctx, append(args, "-k", fmt.Sprintf("-j%d", sb.jobs), "all")...)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		failed := failedTargets(out, sb.out)
		if len(failed) == 0 {
			if err != nil {
				return nil, fmt.Errorf("kselftest build of %s failed (log: %s): %w", sb.targets, sb.logPath, err)
			}
			break
		}
		if round == maxStubRounds {
			return nil, fmt.Errorf("kselftest build of %s still fails after %d rounds of stubs (log: %s)", sb.targets, round, sb.logPath)
		}
		for target, why := range failed {
			if err := writeStub(sb.out, target, why); err != nil {
				return nil, err
			}
			if err := sandbox.Own(target); err != nil {
				return nil, err
			}
			name, _ := filepath.Rel(filepath.Join(sb.out, "kselftest"), target)
			stubbed[name] = why
		}
	}
	out, err := sb.make(ctx, append(args, "KSFT_INSTALL_PATH="+sb.install, "install")...)
	if failed := failedTargets(out, sb.out); err != nil || len(failed) > 0 {
		return nil, fmt.Errorf("kselftest install failed (log: %s): %v", sb.logPath, err)
	}
	if err := sb.xdpDummy(ctx); err != nil {
		return nil, err
	}
	return stubbed, nil
}

// xdpDummy builds bpf/xdp_dummy.bpf.o when installed tests load it from the
// bpf collection (6.1's veth.sh, udpgro.sh, udpgro_fwd.sh) and it is not
// there: an XDP_PASS program that clang alone compiles, where building the
// bpf collection would need bpftool, libbpf and a BTF vmlinux.
func (sb *selftestBuild) xdpDummy(ctx context.Context) error {
	prog := filepath.Join(sb.src, "tools", "testing", "selftests", "bpf", "progs", "xdp_dummy.c")
	obj := filepath.Join(sb.install, "bpf", "xdp_dummy.bpf.o")
	if _, err := os.Stat(obj); err == nil {
		return nil
	}
	out, _ := exec.CommandContext(ctx, "grep", "-rl", "--devices=skip", "bpf/xdp_dummy.bpf.o", sb.install).Output()
	if len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	if _, err := os.Stat(prog); err != nil {
		return nil
	}
	if err := checkTools("clang", "python3"); err != nil {
		fmt.Fprintf(sb.log, "not building xdp_dummy.bpf.o: %v\n", err)
		return nil
	}
	// The install and xdp-include (beside make's output) are the sandboxed
	// make's: no link there is followed.
	inc := filepath.Join(filepath.Dir(sb.out), "xdp-include")
	if err := safefs.MkdirBeneath(sb.install, "bpf", 0o755); err != nil {
		return err
	}
	helpers, err := safefs.ReadBeneathMax(sb.src, filepath.Join("tools", "lib", "bpf", "bpf_helpers.h"), maxSourceFile)
	if err != nil {
		return fmt.Errorf("xdp_dummy: %w", err)
	}
	if err := safefs.WriteBeneath(inc, filepath.Join("bpf", "bpf_helpers.h"), helpers, 0o644); err != nil {
		return err
	}
	for _, d := range []string{filepath.Join(inc, "bpf"), filepath.Dir(obj)} {
		if err := sandbox.Own(d); err != nil {
			return err
		}
	}
	// bpf_doc.py is the (untrusted) source's own script: sandboxed too,
	// its header written by the shell (only stdout goes there).
	defs := filepath.Join(inc, "bpf", "bpf_helper_defs.h")
	doc := []string{"sh", "-c", `out=$1; shift; exec "$@" >"$out"`, "sh", defs, "python3",
		filepath.Join(sb.src, "scripts", "bpf_doc.py"), "--header", "--file", filepath.Join(sb.src, "include", "uapi", "linux", "bpf.h")}
	if out, err := sb.exec(ctx, doc); err != nil {
		return fmt.Errorf("xdp_dummy: bpf_doc.py: %w\n%s", err, out)
	}
	argv := []string{"clang", "-O2", "-target", "bpf", "-I" + filepath.Join(sb.out, "usr", "include"), "-I" + inc, "-c", prog, "-o", obj}
	fmt.Fprintf(sb.log, "$ %s\n", strings.Join(argv, " "))
	if out, err := sb.exec(ctx, argv); err != nil {
		return fmt.Errorf("xdp_dummy: clang: %w\n%s", err, out)
	}
	return nil
}

// maxOutput bounds the output exec keeps of one command; past it only
// lines that may name an error are kept, up to as much again.
const maxOutput = 32 << 20

// exec runs argv from / through the package's command runner (process
// group, Pdeathsig, group kill) in the build sandbox, logging each output
// line, and returns its output (what failedTargets reads).
func (sb *selftestBuild) exec(ctx context.Context, argv []string) ([]byte, error) {
	var out bytes.Buffer
	_, err := run(ctx, command{argv: argv, dir: "/", log: sb.log, jail: sb.jail, nice: sb.nice}, func(line string) {
		if out.Len() >= maxOutput && (out.Len() >= 2*maxOutput || !strings.Contains(line, "rror")) {
			return
		}
		out.WriteString(line)
		out.WriteByte('\n')
	})
	return out.Bytes(), err
}

// make runs make in the jail, where the source tree is an overlay (see
// jailMounts), logging to sb.log, and returns its output. Some selftest
// Makefiles build in the source (6.12's ynl under tools/net/ynl): their
// writes land in the overlay's upper dir, and the shared tree stays pristine.
func (sb *selftestBuild) make(ctx context.Context, args ...string) ([]byte, error) {
	upper, work := filepath.Join(sb.overlay, "upper"), filepath.Join(sb.overlay, "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	argv := append([]string{"make"}, args...)
	fmt.Fprintf(sb.log, "$ make %s\n", strings.Join(args, " "))
	return sb.exec(ctx, argv)
}

// mirrorDirs creates in dst every folder of src.
func mirrorDirs(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		return os.MkdirAll(filepath.Join(dst, rel), 0o755)
	})
}

var (
	failedRe = regexp.MustCompile(`\*\*\* \[[^\]]*?:\d+: (\S+)\] Error \d+`)
	errorRe  = regexp.MustCompile(`^(\S+\.[ch]):(\d+):\d+: error: (.*)$`)
)

// failedTargets finds the targets under out that make reported failing, each
// with the first compiler error of its own source file (or "build failed").
func failedTargets(output []byte, out string) map[string]string {
	firstErr := map[string]string{}
	var targets []string
	sc := bufio.NewScanner(bytes.NewReader(output))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := errorRe.FindStringSubmatch(line); m != nil {
			stem := strings.TrimSuffix(filepath.Base(m[1]), filepath.Ext(m[1]))
			if _, ok := firstErr[stem]; !ok {
				firstErr[stem] = fmt.Sprintf("%s:%s: %s", m[1], m[2], m[3])
			}
		}
		if m := failedRe.FindStringSubmatch(line); m != nil && strings.HasPrefix(m[1], out+string(filepath.Separator)) {
			targets = append(targets, m[1])
		}
	}
	failed := map[string]string{}
	for _, t := range targets {
		stem := strings.TrimSuffix(filepath.Base(t), filepath.Ext(t))
		why, ok := firstErr[stem]
		if !ok {
			why = "build failed"
		}
		failed[t] = why
	}
	return failed
}

// writeStub writes an executable at path below root that says why it is
// not the real program and exits with KSFT_SKIP, so the runner reports the
// test as skipped.
func writeStub(root, path, why string) error {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return err
	}
	msg := strings.ReplaceAll(why, "'", "")
	stub := fmt.Sprintf("#!/bin/sh\necho '%s did not compile on the lab host: %s'\nexit 4\n", filepath.Base(path), msg)
	// root is the sandboxed make's output: no symlink there is followed.
	return safefs.WriteBeneath(root, rel, []byte(stub), 0o755)
}
