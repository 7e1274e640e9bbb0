package kernels

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"napilab/internal/sandbox"
)

// make-6.1-tls.log is real `make -k` output: Debian's 6.1.192 tls.c does not
// compile against its own selftest header.
func TestFailedTargets(t *testing.T) {
	out, err := os.ReadFile("testdata/selftests/make-6.1-tls.log")
	if err != nil {
		t.Fatal(err)
	}
	got := failedTargets(out, "/tmp/kst61/out")
	want := "tls.c:1559: too many arguments to function ‘tls_crypto_info_init’"
	if len(got) != 1 || got["/tmp/kst61/out/kselftest/net/tls"] != want {
		t.Errorf("failedTargets = %q, want tls -> %q", got, want)
	}
	if got := failedTargets(out, "/elsewhere"); len(got) != 0 {
		t.Errorf("targets outside the output dir must not be stubbed, got %q", got)
	}
}

func TestWriteStub(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "net", "tls")
	if err := writeStub(root, p, "tls.c:1: it's broken"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("stub not executable: %v %v", fi, err)
	}
	data, _ := os.ReadFile(p)
	if !strings.Contains(string(data), "exit 4") || !strings.Contains(string(data), "its broken") {
		t.Errorf("stub = %q, want a KSFT_SKIP exit and the reason", data)
	}
}

func TestWithSelftests(t *testing.T) {
	base := &Spec{Name: "stock-6.1", Extends: "/x/base.yaml", Patches: []string{"/p/1.patch"}}
	got := base.WithSelftests([]string{"net", "drivers/net", "net"})
	if got.Name != "stock-6.1.kselftest-drivers_net-net" || got.Extends != "/x/base.yaml" ||
		strings.Join(got.Config.Selftests, ",") != "drivers/net,net" || len(got.Patches) != 1 {
		t.Errorf("WithSelftests = %+v", got)
	}
	if base.Name != "stock-6.1" || len(base.Config.Selftests) != 0 {
		t.Errorf("the base spec changed: %+v", base)
	}
	for c, ok := range map[string]bool{"net": true, "drivers/net": true, "net/forwarding": true, "../x": false, "net:veth.sh": false, "": false, "Net": false} {
		if ValidCollection(c) != ok {
			t.Errorf("ValidCollection(%q) = %v, want %v", c, !ok, ok)
		}
	}
}

func TestSelftestFragments(t *testing.T) {
	src := t.TempDir()
	dir := filepath.Join(src, "tools", "testing", "selftests", "net")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "config"), []byte("CONFIG_VETH=y\nCONFIG_TEST_BPF=m\n"), 0o644)
	frags, err := selftestFragments(src, []string{"net"})
	if err != nil {
		t.Fatal(err)
	}
	if len(frags) != 2 || !frags[0].Advisory || frags[1].Advisory || frags[1].Name != kselftestConfigName {
		t.Fatalf("fragments = %+v, want the collection's (advisory) then the lab's", frags)
	}
	// The lab's fragment turns the boot-time BPF test suite off; module-only
	// requests met by built-ins pass; lost collection settings are reported.
	final := "CONFIG_VETH=y\n# CONFIG_TEST_BPF is not set\n"
	for _, s := range frags[1].Settings {
		if s.Value != notSet {
			final += s.Symbol + "=" + s.Value + "\n"
		}
	}
	unmet, err := VerifyConfig([]byte(final), frags)
	if err != nil || len(unmet) != 0 {
		t.Errorf("VerifyConfig = %v, %v; want no mismatch", unmet, err)
	}
	unmet, err = VerifyConfig([]byte(strings.Replace(final, "CONFIG_VETH=y\n", "", 1)), frags)
	if err != nil || len(unmet) != 1 || unmet[0].Symbol != "CONFIG_VETH" {
		t.Errorf("VerifyConfig without VETH = %v, %v; want VETH unmet, no error", unmet, err)
	}
	if _, err := selftestFragments(src, []string{"nosuch"}); err == nil || !strings.Contains(err.Error(), "no folder tools/testing/selftests/nosuch") {
		t.Errorf("missing collection: %v", err)
	}
}

func TestAddSourced(t *testing.T) {
	src, install := t.TempDir(), t.TempDir()
	sdir := filepath.Join(src, "tools", "testing", "selftests", "net")
	os.MkdirAll(sdir, 0o755)
	os.MkdirAll(filepath.Join(install, "net"), 0o755)
	os.WriteFile(filepath.Join(sdir, "net_helper.sh"), []byte("wait_local_port_listen() { :; }\n"), 0o644)
	os.WriteFile(filepath.Join(install, "net", "udpgro.sh"), []byte("#!/bin/bash\nsource net_helper.sh\n. ./lib.sh\n"), 0o755)
	os.WriteFile(filepath.Join(install, "net", "lib.sh"), []byte(":\n"), 0o644)
	sb := &selftestBuild{src: src, install: install, targets: "net"}
	added, err := sb.addSourced()
	if err != nil || len(added) != 1 || added[0] != "net/net_helper.sh (sourced by udpgro.sh)" {
		t.Fatalf("addSourced = %q, %v", added, err)
	}
	if _, err := os.Stat(filepath.Join(install, "net", "net_helper.sh")); err != nil {
		t.Errorf("net_helper.sh not installed: %v", err)
	}
}

// TestAddSourcedRefusesOutsideLinks plants, in the (patched) source, a
// helper that links to a root-only file: it must not land in the install
// (and the guest's image). The tree's own links are followed.
func TestAddSourcedRefusesOutsideLinks(t *testing.T) {
	for _, tc := range []struct {
		name, link string
		ok         bool
	}{
		{"in-tree link", "../forwarding/lib.sh", true},
		{"absolute link out", "SECRET", false},
		{"relative link out", "../../../../../../../../../../../../..SECRET", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, install, outside := t.TempDir(), t.TempDir(), t.TempDir()
			secret := filepath.Join(outside, "shadow")
			os.WriteFile(secret, []byte("root:secret\n"), 0o600)
			sdir := filepath.Join(src, "tools", "testing", "selftests", "net")
			os.MkdirAll(sdir, 0o755)
			os.MkdirAll(filepath.Join(sdir, "..", "forwarding"), 0o755)
			os.WriteFile(filepath.Join(sdir, "..", "forwarding", "lib.sh"), []byte("lib\n"), 0o644)
			link := strings.Replace(tc.link, "SECRET", secret, 1)
			if err := os.Symlink(link, filepath.Join(sdir, "net_helper.sh")); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Join(install, "net"), 0o755)
			os.WriteFile(filepath.Join(install, "net", "udpgro.sh"), []byte("#!/bin/bash\nsource net_helper.sh\n"), 0o755)
			sb := &selftestBuild{src: src, install: install, targets: "net"}
			added, err := sb.addSourced()
			data, _ := os.ReadFile(filepath.Join(install, "net", "net_helper.sh"))
			if tc.ok {
				if err != nil || len(added) != 1 || string(data) != "lib\n" {
					t.Errorf("addSourced = %q, %v; installed %q, want the in-tree helper", added, err, data)
				}
				return
			}
			if err == nil || strings.Contains(string(data), "secret") {
				t.Errorf("addSourced = %q, %v; installed %q, want the link refused", added, err, data)
			}
		})
	}
}

// TestXdpDummyRefusesOutsideLink plants bpf_helpers.h in the source as a
// link to a root-only file: lab must not copy it where the sandbox reads.
func TestXdpDummyRefusesOutsideLink(t *testing.T) {
	if err := checkTools("clang", "python3"); err != nil {
		t.Skipf("xdpDummy needs %v", err)
	}
	src, tmp, outside := t.TempDir(), t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "shadow")
	os.WriteFile(secret, []byte("root:secret\n"), 0o600)
	writeFiles(t, src, map[string]string{"tools/testing/selftests/bpf/progs/xdp_dummy.c": "int x;\n"})
	os.MkdirAll(filepath.Join(src, "tools", "lib", "bpf"), 0o755)
	os.Symlink(secret, filepath.Join(src, "tools", "lib", "bpf", "bpf_helpers.h"))
	sb := &selftestBuild{src: src, out: filepath.Join(tmp, "build"), install: filepath.Join(tmp, "install"), log: io.Discard}
	writeFiles(t, sb.install, map[string]string{"net/veth.sh": "ip link set dev veth0 xdp object ../bpf/xdp_dummy.bpf.o\n"})
	os.MkdirAll(filepath.Join(tmp, "xdp-include"), 0o755)
	err := sb.xdpDummy(context.Background())
	if err == nil || !strings.Contains(err.Error(), "bpf_helpers.h") {
		t.Errorf("xdpDummy = %v, want bpf_helpers.h refused", err)
	}
	filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if data, _ := os.ReadFile(p); err == nil && !d.IsDir() && strings.Contains(string(data), "secret") {
			t.Errorf("%s holds the root-only file", p)
		}
		return nil
	})
}

func TestParseTestList(t *testing.T) {
	real, err := os.ReadFile("testdata/selftests/kselftest-list-6.1-net.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := parseTestList(real, []string{"net", "net/forwarding"})
	if err != nil || len(tests) != 178 || tests[0] != "net:reuseport_bpf" || !slices.Contains(tests, "net/forwarding:router.sh") {
		t.Errorf("parseTestList of 6.1's net list = %d tests, %v", len(tests), err)
	}
	for _, tc := range []struct{ name, line string }{
		{"command substitution", "net:$(touch /tmp/x)"},
		{"parent folder", "net:../x"},
		{"sub folder", "net:a/b"},
		{"not a target", "bpf:test_verifier"},
		{"no collection", "veth.sh"},
		{"empty test", "net:"},
		{"control character", "net:veth\x1b[2J.sh"},
		{"space", "net:veth.sh; reboot"},
		{"leading dash", "net:-rf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTestList([]byte("net:veth.sh\n"+tc.line+"\n"), []string{"net", "net/forwarding"})
			if err == nil || !strings.Contains(err.Error(), "kselftest-list.txt:2: bad test") {
				t.Errorf("parseTestList(%q) = %v, want refused at line 2", tc.line, err)
			}
		})
	}
}

// fakeInstall is a kselftest install as the sandboxed make leaves it
// (owned by the sandbox's uid when lab runs as root).
func fakeInstall(t *testing.T) *selftestBuild {
	t.Helper()
	tmp := t.TempDir()
	sb := &selftestBuild{install: filepath.Join(tmp, "install"), targets: "net net/forwarding", logPath: filepath.Join(tmp, "log")}
	writeFiles(t, sb.install, map[string]string{
		"kselftest-list.txt":       "net:veth.sh\nnet/forwarding:router.sh\n",
		"run_kselftest.sh":         "#!/bin/sh\n",
		"net/veth.sh":              "#!/bin/bash\n",
		"net/settings":             "timeout=90\n",
		"net/forwarding/lib.sh":    "lib\n",
		"net/forwarding/router.sh": "#!/bin/bash\n",
	})
	if err := sandbox.Own(sb.install); err != nil {
		t.Fatal(err)
	}
	return sb
}

// TestPublishSelftestsPlantedLink plants selftests.json in the install as a
// link to a file outside: lab's write (as root) must not go through it.
func TestPublishSelftestsPlantedLink(t *testing.T) {
	sb := fakeInstall(t)
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("host\n"), 0o644)
	if err := os.Symlink(victim, filepath.Join(sb.install, selftestsFile)); err != nil {
		t.Fatal(err)
	}
	s := &Selftests{Collections: []string{"net"}}
	if err := sb.finish(s); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(sb.install), "net-v6")
	if err := publishSelftests(s, sb.install, dir); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "host\n" {
		t.Errorf("the write went through the planted link: victim holds %q", data)
	}
	if fi, err := os.Lstat(filepath.Join(dir, selftestsFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("%s = %v, %v; want a regular file", selftestsFile, fi, err)
	}
	got, err := loadSelftests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tests, []string{"net:veth.sh", "net/forwarding:router.sh"}) || got.Timeout("net") != 90*time.Second {
		t.Errorf("loaded %+v, want the listed tests and net's timeout", got)
	}
	// The link was not in the manifest: it was replaced before sealing's record was written.
	for _, e := range got.Files {
		if e.Name == selftestsFile {
			t.Errorf("the manifest lists %s", selftestsFile)
		}
	}
}

// TestLoadSelftestsDamaged changes a published install: each change is a
// damaged cache entry, not a hit.
func TestLoadSelftestsDamaged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(dir string) error
	}{
		{"changed file", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "net", "veth.sh"), []byte("#!/bin/bash\nexit 0\n"), 0o555)
		}},
		{"added file", func(dir string) error { return os.WriteFile(filepath.Join(dir, "net", "extra.sh"), nil, 0o555) }},
		{"removed file", func(dir string) error { return os.Remove(filepath.Join(dir, "net", "forwarding", "lib.sh")) }},
		{"writable again", func(dir string) error { return os.Chmod(filepath.Join(dir, "net", "settings"), 0o666) }},
		{"given to the sandbox", func(dir string) error { return sandbox.Own(filepath.Join(dir, "net")) }},
		{"record without a manifest", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, selftestsFile), []byte(`{"tests":["net:veth.sh"]}`), 0o444)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "given to the sandbox" && !sandbox.Active() {
				t.Skip("needs root")
			}
			sb := fakeInstall(t)
			s := &Selftests{Collections: []string{"net"}}
			if err := sb.finish(s); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(filepath.Dir(sb.install), "net-v6")
			if err := publishSelftests(s, sb.install, dir); err != nil {
				t.Fatal(err)
			}
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := loadSelftests(dir); err == nil {
				t.Error("loadSelftests took a damaged install")
			}
		})
	}
}

// FuzzParseTestList checks that every test parseTestList takes is safe as
// a path below its collection and as a runner argument.
func FuzzParseTestList(f *testing.F) {
	if real, err := os.ReadFile("testdata/selftests/kselftest-list-6.1-net.txt"); err == nil {
		f.Add(real)
	}
	f.Add([]byte("net:veth.sh\nnet:$(touch x)\n"))
	f.Add([]byte("net/forwarding:../../x\n"))
	f.Fuzz(func(t *testing.T, list []byte) {
		tests, err := parseTestList(list, []string{"net", "net/forwarding"})
		if err != nil {
			return
		}
		for _, name := range tests {
			coll, test, _ := strings.Cut(name, ":")
			if (coll != "net" && coll != "net/forwarding") || test == "" || test == "." || test == ".." ||
				strings.ContainsAny(test, "/ \t\n\r$`;&|<>()'\"\\*?[]{}~!#") || test[0] == '-' {
				t.Errorf("parseTestList took %q", name)
			}
		}
	})
}
