package kernels

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeApt is a stand-in apt-get: it logs its argv and working dir, answers
// update as $FAKE_APT_UPDATE says (ok, nopubkey, badsig, warn, expired) and download
// with an empty .deb in the working dir.
const fakeApt = `#!/bin/sh
echo "$PWD $*" >> "$FAKE_LOG"
for last; do :; done
case "$*" in
*" update")
	case "$FAKE_APT_UPDATE" in
	nopubkey) echo "W: GPG error: http://deb.debian.org/debian trixie-backports InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY 0E98404D386FA1D9"
		echo "E: The repository 'http://deb.debian.org/debian trixie-backports InRelease' is not signed."; exit 100;;
	badsig) echo "Err:1 http://deb.debian.org/debian trixie-backports InRelease"
		echo "  The following signatures couldn't be verified because the public key is not available"; exit 100;;
	warn) echo "W: An error occurred during the signature verification. The repository is not updated and the previous index files will be used. GPG error: http://deb.debian.org/debian trixie-backports InRelease: NO_PUBKEY 0E98404D386FA1D9"; exit 0;;
	expired) echo "E: Release file for http://deb.debian.org/debian/dists/trixie-backports/InRelease is expired (invalid since 1d 14h 31min 53s). Updates for this repository will not be applied."; exit 100;;
	esac
	exit 0;;
*" download "*) : > "${last}_7.3.4-1~bpo13+1_all.deb"; exit 0;;
esac
exit 1
`

// fakeDpkgDeb is a stand-in dpkg-deb: --field prints a version, -x
// unpacks a tarball member, or fails half-way with $FAKE_DPKG_FAIL set.
const fakeDpkgDeb = `#!/bin/sh
echo "$PWD dpkg-deb $*" >> "$FAKE_LOG"
case "$1" in
--field) echo "7.3.4-1~bpo13+1";;
-x) mkdir -p "$3/usr/src"
	if [ -n "$FAKE_DPKG_FAIL" ]; then echo "dpkg-deb: error: short read" ; exit 2; fi
	echo tarball > "$3/usr/src/linux-source-7.3.tar.xz";;
*) exit 1;;
esac
`

// fakeFetchTools puts the fakes first on PATH, a stand-in trixie keyring
// in keyringDir, and returns the log path.
func fakeFetchTools(t *testing.T) string {
	t.Helper()
	keys := t.TempDir()
	writeFiles(t, keys, map[string]string{"debian-archive-trixie-automatic.gpg": "key"})
	old := keyringDir
	keyringDir = keys
	t.Cleanup(func() { keyringDir = old })
	bin := t.TempDir()
	writeFiles(t, bin, map[string]string{"apt-get": fakeApt, "dpkg-deb": fakeDpkgDeb})
	for _, f := range []string{"apt-get", "dpkg-deb"} {
		if err := os.Chmod(filepath.Join(bin, f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(t.TempDir(), "log")
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("FAKE_LOG", log)
	t.Setenv("FAKE_APT_UPDATE", "ok")
	t.Setenv("FAKE_DPKG_FAIL", "")
	t.Setenv(MirrorEnv, "")
	return log
}

// testBase is what stock-7.3.yaml's base loads as.
var testBase = Base{Package: "linux-source-7.3", Suite: "trixie-backports",
	Member: "usr/src/linux-source-7.3.tar.xz", Tarball: "/nonexistent/usr/src/linux-source-7.3.tar.xz"}

// readLog returns the fakes' log lines.
func readLog(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// debsEntries lists <cache>/debs.
func debsEntries(t *testing.T, cache string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cache, "debs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestFetchBasePrivateApt(t *testing.T) {
	log := fakeFetchTools(t)
	cache := t.TempDir()
	debs := filepath.Join(cache, "debs")
	got, err := FetchBase(context.Background(), cache, testBase)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(debs, "linux-source-7.3_7.3.4-1~bpo13+1", "usr/src/linux-source-7.3.tar.xz")
	if got != want {
		t.Errorf("FetchBase = %s, want %s", got, want)
	}
	list, _ := os.ReadFile(filepath.Join(debs, "sources.list"))
	if want := "deb [signed-by=" + keyringDir + "/debian-archive-trixie-automatic.gpg check-valid-until=yes valid-until-max=1209600 check-date=yes] " +
		"http://deb.debian.org/debian trixie-backports main\n"; string(list) != want {
		t.Errorf("sources.list = %q, want %q", list, want)
	}
	lines := readLog(t, log)
	if len(lines) != 4 {
		t.Fatalf("want update, download, --field, -x; got:\n%s", strings.Join(lines, "\n"))
	}
	private := []string{
		"-o Dir::Etc::sourcelist=" + debs + "/sources.list",
		"-o Dir::Etc::sourceparts=/dev/null",
		"-o Dir::State::Lists=" + debs + "/lists",
		"-o Dir::Cache=" + debs + "/cache",
		"-o APT::Get::List-Cleanup=0",
		"-o Acquire::Check-Valid-Until=true",
		"-o Acquire::Check-Date=true",
		"-o Acquire::Max-ValidTime=1209600",
		"-o Acquire::AllowInsecureRepositories=false",
		"-o Acquire::AllowDowngradeToInsecureRepositories=false",
		"-o APT::Get::AllowUnauthenticated=false",
	}
	for i, verb := range []string{" update", " download linux-source-7.3"} {
		line := lines[i]
		if !strings.HasSuffix(line, verb) {
			t.Errorf("apt call %d = %q, want it to end in %q", i, line, verb)
		}
		for _, o := range private {
			if !strings.Contains(line, o) {
				t.Errorf("apt call %q lacks %q", line, o)
			}
		}
		for _, bad := range []string{"allow-unauthenticated", "trusted=yes", "InsecureRepositories=true", "AllowUnauthenticated=true", "/etc/apt"} {
			if strings.Contains(line, bad) {
				t.Errorf("apt call %q has %q", line, bad)
			}
		}
	}
	if dir, _, _ := strings.Cut(lines[1], " "); filepath.Dir(dir) != debs || !strings.HasPrefix(filepath.Base(dir), ".fetch-pid") {
		t.Errorf("download ran in %s, want a temp dir in %s", dir, debs)
	}
	names := debsEntries(t, cache)
	for _, n := range names {
		if strings.HasPrefix(n, ".fetch-") {
			t.Errorf("temp dir %s left behind", n)
		}
	}
	// A second call finds the extraction and runs nothing.
	if again, err := FetchBase(context.Background(), cache, testBase); err != nil || again != want {
		t.Errorf("second FetchBase = %s, %v", again, err)
	}
	if n := len(readLog(t, log)); n != 4 {
		t.Errorf("second FetchBase ran %d commands, want none", n-4)
	}
}

func TestFetchBaseVerifyFailure(t *testing.T) {
	for _, mode := range []string{"nopubkey", "badsig", "warn", "expired"} {
		t.Run(mode, func(t *testing.T) {
			log := fakeFetchTools(t)
			t.Setenv("FAKE_APT_UPDATE", mode)
			cache := t.TempDir()
			_, err := FetchBase(context.Background(), cache, testBase)
			var ae *AuthError
			if !errors.As(err, &ae) {
				t.Fatalf("FetchBase error = %v, want *AuthError", err)
			}
			want := "failed to verify"
			if mode == "expired" {
				want = "older than 336h0m0s"
			}
			if ae.Expired != (mode == "expired") || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "trixie-backports") {
				t.Errorf("error %q (expired %v) does not say what failed", err, ae.Expired)
			}
			if lines := readLog(t, log); len(lines) != 1 {
				t.Errorf("ran %d commands after the failed update, want none: %v", len(lines)-1, lines)
			}
			for _, n := range debsEntries(t, cache) {
				if strings.HasPrefix(n, "linux-source-7.3_") {
					t.Errorf("published %s after a verification failure", n)
				}
			}
		})
	}
}

func TestFetchBaseExtractAtomic(t *testing.T) {
	fakeFetchTools(t)
	t.Setenv("FAKE_DPKG_FAIL", "1")
	cache := t.TempDir()
	if _, err := FetchBase(context.Background(), cache, testBase); err == nil || !strings.Contains(err.Error(), "short read") {
		t.Fatalf("FetchBase error = %v, want the dpkg-deb failure with its output", err)
	}
	for _, n := range debsEntries(t, cache) {
		if strings.HasPrefix(n, "linux-source-7.3_") || strings.HasPrefix(n, ".fetch-") {
			t.Errorf("left %s after a failed extraction", n)
		}
	}
}

func TestFetchBaseMirror(t *testing.T) {
	fakeFetchTools(t)
	cache := t.TempDir()
	t.Setenv(MirrorEnv, "http://mirror.example/debian/")
	if _, err := FetchBase(context.Background(), cache, testBase); err != nil {
		t.Fatal(err)
	}
	list, _ := os.ReadFile(filepath.Join(cache, "debs", "sources.list"))
	if !strings.HasSuffix(string(list), "] http://mirror.example/debian trixie-backports main\n") {
		t.Errorf("sources.list = %q", list)
	}
	t.Setenv(MirrorEnv, "[trusted=yes] http://evil.example/")
	if _, err := FetchBase(context.Background(), t.TempDir(), testBase); err == nil || !strings.Contains(err.Error(), MirrorEnv) {
		t.Errorf("bad mirror error = %v, want one naming $%s", err, MirrorEnv)
	}
}

// TestSuiteKeyring: each suite is pinned to the key of its release; a
// suite named by an alias has no keyring and is not fetched.
func TestSuiteKeyring(t *testing.T) {
	for _, tc := range []struct{ suite, want string }{
		{"trixie-backports", "/usr/share/keyrings/debian-archive-trixie-automatic.gpg"},
		{"trixie", "/usr/share/keyrings/debian-archive-trixie-automatic.gpg"},
		{"bookworm-updates", "/usr/share/keyrings/debian-archive-bookworm-automatic.gpg"},
		{"trixie-security", "/usr/share/keyrings/debian-archive-trixie-security-automatic.gpg"},
		{"stable-backports", "/usr/share/keyrings/debian-archive-stable-automatic.gpg"},
	} {
		if got := suiteKeyring(tc.suite); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.suite, got, tc.want)
		}
	}
	want := "deb [signed-by=/usr/share/keyrings/debian-archive-trixie-automatic.gpg check-valid-until=yes " +
		"valid-until-max=1209600 check-date=yes] http://deb.debian.org/debian trixie-backports main\n"
	if got := sourcesLine(defaultMirror, "trixie-backports"); got != want {
		t.Errorf("sources line %q, want %q", got, want)
	}
}

// TestFetchBaseNoKeyring: without its release's keyring a suite is not
// fetched (apt would otherwise accept any key the host trusts).
func TestFetchBaseNoKeyring(t *testing.T) {
	log := fakeFetchTools(t)
	keyringDir = t.TempDir()
	b := testBase
	b.Suite = "stable-backports"
	for _, b := range []Base{testBase, b} {
		_, err := FetchBase(context.Background(), t.TempDir(), b)
		if err == nil || !strings.Contains(err.Error(), "no archive key "+keyringDir) || !strings.Contains(err.Error(), "debian-archive-keyring") {
			t.Errorf("%s: error = %v, want the missing keyring named", b.Suite, err)
		}
	}
	if _, err := os.Stat(log); err == nil {
		t.Errorf("apt ran without a keyring: %v", readLog(t, log))
	}
}

func TestResolveBase(t *testing.T) {
	log := fakeFetchTools(t)
	t.Setenv("FAKE_APT_UPDATE", "nopubkey") // any apt run fails the test
	cache := t.TempDir()
	l := layout{cache}
	installed := filepath.Join(t.TempDir(), "linux-source-7.3.tar.xz")
	writeFiles(t, filepath.Dir(installed), map[string]string{filepath.Base(installed): "x"})
	for _, v := range []string{"7.3.4-1~bpo13+1", "7.3.10-1~bpo13+1", "7.3.9-2"} {
		writeFiles(t, l.debsDir(), map[string]string{"linux-source-7.3_" + v + "/usr/src/linux-source-7.3.tar.xz": v})
	}
	spec := &Spec{Base: testBase}
	spec.Base.Tarball = installed
	if err := resolveBase(context.Background(), l, spec, true); err != nil || spec.Base.Tarball != installed {
		t.Errorf("installed: Tarball = %s, %v; want the installed %s", spec.Base.Tarball, err, installed)
	}
	spec.Base = testBase
	want := filepath.Join(l.debsDir(), "linux-source-7.3_7.3.10-1~bpo13+1/usr/src/linux-source-7.3.tar.xz")
	if err := resolveBase(context.Background(), l, spec, true); err != nil || spec.Base.Tarball != want {
		t.Errorf("fetched: Tarball = %s, %v; want the newest fetched %s", spec.Base.Tarball, err, want)
	}
	if _, err := os.Stat(log); err == nil {
		t.Errorf("resolveBase ran apt with the package fetched: %v", readLog(t, log))
	}
	spec.Base = testBase
	empty := layout{t.TempDir()}
	if err := resolveBase(context.Background(), empty, spec, false); err != nil || spec.Base.Tarball != testBase.Tarball {
		t.Errorf("not fetched, no fetch: Tarball = %s, %v; want it untouched and no apt run", spec.Base.Tarball, err)
	}
	if _, err := os.Stat(log); err == nil {
		t.Errorf("resolveBase without fetch ran apt: %v", readLog(t, log))
	}
	_, err := resolveInputs(context.Background(), empty, spec)
	if err == nil || !strings.Contains(err.Error(), "not fetched yet (lab kernel build fetches linux-source-7.3 from trixie-backports)") {
		t.Errorf("resolveInputs error = %v, want a not-fetched MissingTarballError", err)
	}
	if err := resolveBase(context.Background(), empty, spec, true); !errors.As(err, new(*AuthError)) {
		t.Errorf("not fetched: error = %v, want the fetch's *AuthError", err)
	}
}

func TestVersionLess(t *testing.T) {
	sorted := []string{"p_7.3.4-1~bpo13+1", "p_7.3.9-2", "p_7.3.10-1", "p_7.10.1-1", "p_10.0-1"}
	got := slices.Clone(sorted)
	slices.Reverse(got)
	slices.SortFunc(got, func(a, b string) int {
		if versionLess(a, b) {
			return -1
		}
		if versionLess(b, a) {
			return 1
		}
		return 0
	})
	if !slices.Equal(got, sorted) {
		t.Errorf("sorted = %v, want %v", got, sorted)
	}
}

func TestLoadSpecSuite(t *testing.T) {
	spec, err := LoadSpec("stock-7.3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Base{Tarball: "/usr/src/linux-source-7.3.tar.xz", Package: "linux-source-7.3",
		Suite: "trixie-backports", Member: "usr/src/linux-source-7.3.tar.xz"}
	if spec.Base != want {
		t.Errorf("Base = %+v, want %+v", spec.Base, want)
	}
	dir := t.TempDir()
	for name, tc := range map[string]struct{ base, msg string }{
		"no package":    {"suite: trixie-backports", "base.suite needs base.package"},
		"bad suite":     {"package: p\n  suite: \"a b\"", `base.suite "a b"`},
		"absolute path": {"package: p\n  suite: s\n  tarball: /usr/src/p.tar.xz", "path inside the package"},
		"escapes":       {"package: p\n  suite: s\n  tarball: ../p.tar.xz", "path inside the package"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		writeFiles(t, dir, map[string]string{filepath.Base(p): "name: x\nbase:\n  " + tc.base + "\n"})
		if _, err := LoadSpec(p); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error = %v, want %q", name, err, tc.msg)
		}
	}
}

// TestFetchBaseReal fetches linux-source-7.3 from Debian into a temp
// cache with the host's apt and keyring (~167 MB).
func TestFetchBaseReal(t *testing.T) {
	if testing.Short() {
		t.Skip("real fetch (network, ~167 MB) skipped in -short mode")
	}
	if err := checkFetchTools(); err != nil {
		t.Skip(err)
	}
	spec, err := LoadSpec("stock-7.3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	p, err := FetchBase(ctx, t.TempDir(), spec.Base)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Size() < 100<<20 {
		t.Fatalf("fetched tarball %s: %v, size %d", p, err, fi.Size())
	}
	t.Logf("fetched %s (%d MB) in %s", p, fi.Size()>>20, time.Since(start).Round(time.Second))
}

// realApt skips a test that needs the host's apt and Debian's mirror.
func realApt(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real apt-get update (network) skipped in -short mode")
	}
	if err := checkFetchTools(); err != nil {
		t.Skip(err)
	}
	c, err := net.DialTimeout("tcp", "deb.debian.org:80", 10*time.Second)
	if err != nil {
		t.Skipf("no route to the mirror: %v", err)
	}
	c.Close()
}

// TestFetchBaseRealRefused runs the host's apt against Debian's mirror and
// sees it refuse trixie-backports when the pinned keyring holds another
// release's key (the host trusts the right one: only signed-by can make
// this fail) and when the Release is older than the maximum age (the host
// may have turned date checks off in its apt.conf; the lab turns them on).
func TestFetchBaseRealRefused(t *testing.T) {
	realApt(t)
	wrong, err := os.ReadFile("/usr/share/keyrings/debian-archive-bullseye-stable.gpg")
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name    string
		key     []byte
		age     time.Duration
		expired bool
	}{
		{name: "another release's key", key: wrong, age: MaxReleaseAge},
		{name: "older than a minute", age: time.Minute, expired: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := t.TempDir()
			if err := os.Chmod(keys, 0o755); err != nil { // apt reads keyrings as _apt
				t.Fatal(err)
			}
			key := tc.key
			if key == nil {
				if key, err = os.ReadFile(suiteKeyring(testBase.Suite)); err != nil {
					t.Skip(err)
				}
			}
			writeFiles(t, keys, map[string]string{"debian-archive-trixie-automatic.gpg": string(key)})
			oldDir, oldAge := keyringDir, releaseAge
			keyringDir, releaseAge = keys, tc.age
			defer func() { keyringDir, releaseAge = oldDir, oldAge }()
			t.Setenv(MirrorEnv, "")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err := FetchBase(ctx, t.TempDir(), testBase)
			var ae *AuthError
			if !errors.As(err, &ae) || ae.Expired != tc.expired {
				t.Fatalf("FetchBase error = %v, want an *AuthError with Expired %v", err, tc.expired)
			}
		})
	}
}

func TestFetchChecks(t *testing.T) {
	fakeFetchTools(t)
	cache := t.TempDir()
	spec := &Spec{Base: testBase}
	check := func() Check {
		t.Helper()
		cs := FetchChecks(cache, spec, spec)
		if len(cs) != 1 {
			t.Fatalf("FetchChecks = %+v, want one check for the one base", cs)
		}
		return cs[0]
	}
	if c := check(); !c.OK || !strings.Contains(c.Package, "fetchable") {
		t.Errorf("not fetched = %+v, want ok and fetchable", c)
	}
	writeFiles(t, layout{cache}.debsDir(), map[string]string{"linux-source-7.3_7.3.4-1/usr/src/linux-source-7.3.tar.xz": "x"})
	if c := check(); !c.OK || !strings.Contains(c.Package, "fetched: "+cache) {
		t.Errorf("fetched = %+v, want ok and the fetched path", c)
	}
	cache = t.TempDir()
	t.Setenv("PATH", t.TempDir())
	if c := check(); c.OK || c.Package != "apt" {
		t.Errorf("without apt-get = %+v, want missing, package apt", c)
	}
	if cs := HostChecks(spec); slices.ContainsFunc(cs, func(c Check) bool { return c.What == spec.Base.Tarball }) {
		t.Errorf("HostChecks lists the fetched base's tarball as a host file: %+v", cs)
	}
}
