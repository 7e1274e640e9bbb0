package kernels

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
