package kernels

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A spec's base may name a Debian suite the host's apt does not list
// (base.suite). When the tarball is not installed under /usr/src, the lab
// fetches the package itself into <cache>/debs, with apt and a lab-owned
// sources list, lists dir and package cache: the host's apt configuration
// and state are never touched. apt verifies the suite's Release signature
// against the one archive key that signs the suite's release (signed-by= a
// keyring of debian-archive-keyring, not every key the host trusts) and
// refuses a Release past its Valid-Until or older than MaxReleaseAge, both
// forced on whatever the host's apt.conf says; any verification failure is
// an error, never a fallback.
//
//	debs/sources.list          the "deb [signed-by=... ] <mirror> <suite> main" line of the suite fetched
//	debs/lists/, debs/cache/   apt's private state (Dir::State::Lists, Dir::Cache)
//	debs/<package>_<version>/  the package's files (dpkg-deb -x), published by rename
//	debs/lock                  flock held while fetching

// defaultMirror is the Debian mirror the lab fetches from.
const defaultMirror = "http://deb.debian.org/debian"

// MirrorEnv overrides defaultMirror.
const MirrorEnv = "NAPILAB_DEBIAN_MIRROR"

var (
	// debNameRe is what a package or suite name may look like (Debian policy).
	debNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*$`)
	// mirrorRe is a plain http(s) URL: no spaces or brackets that would
	// change the meaning of the sources.list line (e.g. [trusted=yes]).
	mirrorRe = regexp.MustCompile(`^https?://[A-Za-z0-9._~:/%@-]+$`)
	// authFailRe finds apt's signature verification failures: apt update
	// only warns, exit 0, when it keeps the previous lists after one.
	authFailRe = regexp.MustCompile(`NO_PUBKEY|EXPKEYSIG|REVKEYSIG|BADSIG|GPG error|signatures couldn't be verified|is not signed|cannot be authenticated|signatures were invalid`)
	// staleRe finds apt refusing a Release by its dates.
	staleRe = regexp.MustCompile(`is expired|is not valid yet`)
)

// keyringDir holds debian-archive-keyring's keyrings.
var keyringDir = "/usr/share/keyrings"

// MaxReleaseAge is the oldest suite Release apt accepts, from its Date. A
// mirror (or anyone on the path to it) can replay an old signed Release to
// hold back updates; Valid-Until stops that only where a suite sets it and
// the host's apt.conf does not turn the check off. trixie-backports sets a
// 7-day Valid-Until, which binds first; 14 days bounds suites without one
// (a stable main suite, whose Release changes only at point releases, is
// refused between two weeks after one and the next: install such a
// package with the host's apt).
const MaxReleaseAge = 14 * 24 * time.Hour

// releaseAge is MaxReleaseAge; tests lower it to see apt refuse a fresh one.
var releaseAge = MaxReleaseAge

// suiteKeyring is the keyring of the archive key that signs suite: the
// automatic signing key of its release (debian-archive-trixie-automatic.gpg
// for trixie and trixie-backports), the security one for <release>-security.
// A suite named by an alias (stable-backports, sid) has none.
func suiteKeyring(suite string) string {
	release, rest, _ := strings.Cut(suite, "-")
	kind := "automatic"
	if rest == "security" {
		kind = "security-automatic"
	}
	return filepath.Join(keyringDir, "debian-archive-"+release+"-"+kind+".gpg")
}

// sourcesLine is the one line of the lab's sources list: the suite pinned
// to its release's key, its Release checked for age whatever the host's
// apt.conf says.
func sourcesLine(mirror, suite string) string {
	return fmt.Sprintf("deb [signed-by=%s check-valid-until=yes valid-until-max=%d check-date=yes] %s %s main\n",
		suiteKeyring(suite), int(releaseAge.Seconds()), mirror, suite)
}

// AuthError reports that apt could not verify what it fetched.
type AuthError struct {
	// Package is the package being fetched.
	Package string
	// Suite is the suite it was fetched from.
	Suite string
	// Output is apt's output.
	Output []string
	// Expired says apt refused the suite's Release by its dates, not by
	// its signature.
	Expired bool
}

// Error names the package and quotes apt.
func (e *AuthError) Error() string {
	if e.Expired {
		return fmt.Sprintf("failed to fetch %s: the Release of suite %s is past its Valid-Until, older than %v or dated in the future (a mirror replaying an old Release, or a wrong clock)\n%s",
			e.Package, e.Suite, releaseAge, strings.Join(e.Output, "\n"))
	}
	return fmt.Sprintf("failed to verify the signature of %s (suite %s): is debian-archive-keyring installed and current?\n%s",
		e.Package, e.Suite, strings.Join(e.Output, "\n"))
}

func (l layout) debsDir() string { return filepath.Join(l.root, "debs") }

// mirror returns $NAPILAB_DEBIAN_MIRROR or the default, checked.
func mirror() (string, error) {
	m := os.Getenv(MirrorEnv)
	if m == "" {
		return defaultMirror, nil
	}
	m = strings.TrimRight(m, "/")
	if !mirrorRe.MatchString(m) {
		return "", fmt.Errorf("bad $%s %q: want an http(s) URL such as %s", MirrorEnv, m, defaultMirror)
	}
	return m, nil
}

// fetchedTarball returns the base's tarball in an already fetched copy of
// its package, the newest version when there are several, or "".
func fetchedTarball(l layout, b Base) string {
	dirs, _ := filepath.Glob(filepath.Join(l.debsDir(), b.Package+"_*"))
	sort.Slice(dirs, func(i, j int) bool { return versionLess(filepath.Base(dirs[i]), filepath.Base(dirs[j])) })
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(dirs[i], b.Member)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// versionLess orders two "<package>_<version>" folder names by version:
// numbers numerically, the rest as text (enough for one package's
// versions; dpkg's full ordering, with ~ sorting first, is not needed here).
func versionLess(a, b string) bool {
	na, nb := splitDigits(a), splitDigits(b)
	for i := 0; i < len(na) && i < len(nb); i++ {
		if na[i] == nb[i] {
			continue
		}
		if len(na[i]) != len(nb[i]) && isDigits(na[i]) && isDigits(nb[i]) {
			return len(na[i]) < len(nb[i])
		}
		return na[i] < nb[i]
	}
	return len(na) < len(nb)
}

// splitDigits splits s into runs of digits and non-digits, leading zeros dropped.
func splitDigits(s string) []string {
	var out []string
	for s != "" {
		i := 1
		for i < len(s) && isDigit(s[i]) == isDigit(s[0]) {
			i++
		}
		part := s[:i]
		if isDigit(part[0]) {
			part = strings.TrimLeft(part, "0")
		}
		out = append(out, part)
		s = s[i:]
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isDigits(s string) bool { return s != "" && strings.TrimLeft(s, "0123456789") == "" }

// resolveBase makes spec.Base.Tarball point at a tarball on disk: the
// installed one when present (it wins: the host's admin chose it, and the
// cache keys on the tarball's content, not its path), else one fetched
// earlier into the cache, else, when fetch is set, it fetches the package
// from base.suite. Without fetch (lab kernel list, gc) nothing goes to the
// network and a base not fetched yet stays missing. Specs without a suite
// are left alone.
func resolveBase(ctx context.Context, l layout, spec *Spec, fetch bool) error {
	b := spec.Base
	if b.Suite == "" {
		return nil
	}
	if _, err := os.Stat(b.Tarball); err == nil {
		return nil
	}
	if p := fetchedTarball(l, b); p != "" {
		spec.Base.Tarball = p
		return nil
	}
	if !fetch {
		return nil
	}
	p, err := FetchBase(ctx, l.root, b)
	if err != nil {
		return err
	}
	spec.Base.Tarball = p
	return nil
}

// FetchBase downloads b.Package from b.Suite into <cacheDir>/debs, verified
// by apt, extracts it to debs/<package>_<version>/ atomically and returns
// the path of b.Member in it. A version already extracted is kept as it is.
func FetchBase(ctx context.Context, cacheDir string, b Base) (string, error) {
	if !debNameRe.MatchString(b.Package) || !debNameRe.MatchString(b.Suite) {
		return "", fmt.Errorf("failed to fetch %q from %q: bad package or suite name", b.Package, b.Suite)
	}
	if err := checkFetchTools(); err != nil {
		return "", err
	}
	m, err := mirror()
	if err != nil {
		return "", err
	}
	if k := suiteKeyring(b.Suite); !regularFile(k) {
		return "", fmt.Errorf("failed to fetch %s from %s: no archive key %s (install or update debian-archive-keyring; name the suite by its release, e.g. trixie-backports)",
			b.Package, b.Suite, k)
	}
	l := layout{cacheDir}
	debs := l.debsDir()
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return "", fmt.Errorf("failed to create %s: %w", debs, err)
	}
	unlock, err := LockFile(ctx, filepath.Join(debs, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if p := fetchedTarball(l, b); p != "" { // fetched while we waited
		return p, nil
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(debs, d), 0o755); err != nil {
			return "", fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	list := sourcesLine(m, b.Suite)
	if err := writeFileAtomic(filepath.Join(debs, "sources.list"), []byte(list)); err != nil {
		return "", err
	}
	apt := aptOptions(debs)
	if err := runApt(ctx, b, append(append([]string{"apt-get"}, apt...), "update"), debs); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(debs, TempPattern(".fetch-"))
	if err != nil {
		return "", fmt.Errorf("failed to create temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := runApt(ctx, b, append(append([]string{"apt-get"}, apt...), "download", b.Package), tmp); err != nil {
		return "", err
	}
	debFiles, _ := filepath.Glob(filepath.Join(tmp, b.Package+"_*.deb"))
	if len(debFiles) != 1 {
		return "", fmt.Errorf("failed to fetch %s: apt-get download left %d .deb files, want 1", b.Package, len(debFiles))
	}
	out, err := run(ctx, command{argv: []string{"dpkg-deb", "--field", debFiles[0], "Version"}}, nil)
	if err != nil || len(out) != 1 || !debVersionRe.MatchString(out[0]) {
		return "", fmt.Errorf("failed to read the version of %s: %v\n%s", debFiles[0], err, strings.Join(out, "\n"))
	}
	dest := filepath.Join(debs, b.Package+"_"+out[0])
	x := filepath.Join(tmp, "x")
	if out, err := run(ctx, command{argv: []string{"dpkg-deb", "-x", debFiles[0], x}}, nil); err != nil {
		return "", fmt.Errorf("failed to extract %s: %w\n%s", debFiles[0], err, strings.Join(out, "\n"))
	}
	tarball := filepath.Join(x, b.Member)
	if fi, err := os.Stat(tarball); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("package %s %s has no %s", b.Package, out[0], b.Member)
	}
	if err := os.Rename(x, dest); err != nil {
		if _, serr := os.Stat(filepath.Join(dest, b.Member)); serr == nil {
			return filepath.Join(dest, b.Member), nil // the same version, published earlier
		}
		return "", fmt.Errorf("failed to move %s into place: %w", dest, err)
	}
	if err := SyncDir(debs); err != nil {
		return "", fmt.Errorf("failed to sync %s: %w", debs, err)
	}
	return filepath.Join(dest, b.Member), nil
}

// debVersionRe is a Debian version as a folder name may hold it.
var debVersionRe = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~:-]*$`)

// aptOptions point apt at the lab's sources list, lists and cache under
// debs and away from the host's sources.list.d; the host's keyring and
// dpkg status are read, never written. The checks a host's apt.conf may
// turn off (a host on snapshot.debian.org turns off the date checks) are
// turned back on for the lab's calls alone.
func aptOptions(debs string) []string {
	return []string{
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(debs, "sources.list"),
		"-o", "Dir::Etc::sourceparts=/dev/null",
		"-o", "Dir::State::Lists=" + filepath.Join(debs, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(debs, "cache"),
		"-o", "APT::Get::List-Cleanup=0",
		"-o", "Acquire::Check-Valid-Until=true",
		"-o", "Acquire::Check-Date=true",
		"-o", fmt.Sprintf("Acquire::Max-ValidTime=%d", int(releaseAge.Seconds())),
		"-o", "Acquire::AllowInsecureRepositories=false",
		"-o", "Acquire::AllowDowngradeToInsecureRepositories=false",
		"-o", "APT::Get::AllowUnauthenticated=false",
	}
}

// runApt runs one apt-get command in dir and turns a signature failure,
// even one apt only warns about, into an *AuthError.
func runApt(ctx context.Context, b Base, argv []string, dir string) error {
	out, err := run(ctx, command{argv: argv, dir: dir}, nil)
	for _, line := range out {
		if staleRe.MatchString(line) {
			return &AuthError{Package: b.Package, Suite: b.Suite, Output: out, Expired: true}
		}
	}
	for _, line := range out {
		if authFailRe.MatchString(line) {
			return &AuthError{Package: b.Package, Suite: b.Suite, Output: out}
		}
	}
	if err != nil {
		return fmt.Errorf("failed to run %s %s for %s from %s: %w\n%s", argv[0], argv[len(argv)-1],
			b.Package, b.Suite, err, strings.Join(out, "\n"))
	}
	return nil
}

// fetchTools are the host programs FetchBase runs.
var fetchTools = []string{"apt-get", "dpkg-deb"}

// checkFetchTools returns a *MissingToolError for each fetch tool not on PATH.
func checkFetchTools() error {
	return checkTools(fetchTools...)
}

// regularFile says whether path is a regular file (links followed: the
// keyrings are the host's own).
func regularFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// FetchState says where a spec's base tarball is: installed, fetched into
// cacheDir, or neither (then the lab fetches it on first use).
func FetchState(cacheDir string, b Base) (path string, fetched bool, err error) {
	if _, err := os.Stat(b.Tarball); err == nil {
		return b.Tarball, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	if p := fetchedTarball(layout{cacheDir}, b); p != "" {
		return p, true, nil
	}
	return "", false, nil
}
