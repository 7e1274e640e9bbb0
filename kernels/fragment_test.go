package kernels

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// mustFragment parses a fragment or fails the test.
func mustFragment(t *testing.T, name, data string) Fragment {
	t.Helper()
	frag, err := ParseFragment(name, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return frag
}

func TestParseFragment(t *testing.T) {
	frag := mustFragment(t, "f.config", "# comment\nCONFIG_A=y\n\n# CONFIG_B is not set\nCONFIG_S=\"x y\"\nCONFIG_N=n\n")
	want := []Setting{{"CONFIG_A", "y", 2}, {"CONFIG_B", "n", 4}, {"CONFIG_S", `"x y"`, 5}, {"CONFIG_N", "n", 6}}
	if !reflect.DeepEqual(frag.Settings, want) {
		t.Errorf("Settings = %v, want %v", frag.Settings, want)
	}
	_, err := ParseFragment("f.config", []byte("CONFIG_A=y\nA=y\n"))
	var se *SpecError
	if !errors.As(err, &se) || se.Line != 2 || !strings.HasPrefix(err.Error(), "f.config:2: malformed config line") {
		t.Errorf("error = %v, want f.config:2: malformed config line", err)
	}
}

func TestParseLabFragments(t *testing.T) {
	for _, name := range []string{"base", "virtio", "net", "debug"} {
		data, err := os.ReadFile("configs/" + name + ".config")
		if err != nil {
			t.Fatal(err)
		}
		if frag := mustFragment(t, name, string(data)); len(frag.Settings) == 0 {
			t.Errorf("%s: no settings", name)
		}
	}
}

func TestMergeConfig(t *testing.T) {
	tests := []struct {
		name, dotconfig string
		fragments       []string
		want            string
	}{
		{"override moves to the end", "#\n# header\nCONFIG_A=y\nCONFIG_B=m\nCONFIG_C=y\n", []string{"CONFIG_B=y\n"},
			"#\n# header\nCONFIG_A=y\nCONFIG_C=y\nCONFIG_B=y\n"},
		{"choice member set after the old choice", "# CONFIG_SLUB is not set\nCONFIG_SLOB=y\n", []string{"CONFIG_SLUB=y\n"},
			"CONFIG_SLOB=y\nCONFIG_SLUB=y\n"},
		{"set a not-set symbol", "# CONFIG_NET is not set\nCONFIG_X=1\n", []string{"CONFIG_NET=y\n"},
			"CONFIG_X=1\nCONFIG_NET=y\n"},
		{"unset a set symbol", "CONFIG_A=y\n", []string{"# CONFIG_A is not set\n"}, "# CONFIG_A is not set\n"},
		{"=n is written as not set", "CONFIG_A=y\n", []string{"CONFIG_A=n\n"}, "# CONFIG_A is not set\n"},
		{"append new symbols in order", "CONFIG_A=y\n", []string{"CONFIG_C=y\n", "CONFIG_B=\"s\"\n"},
			"CONFIG_A=y\nCONFIG_C=y\nCONFIG_B=\"s\"\n"},
		{"later fragment wins", "", []string{"CONFIG_A=y\nCONFIG_B=y\n", "CONFIG_A=m\n"}, "CONFIG_B=y\nCONFIG_A=m\n"},
		{"duplicate in one fragment keeps the last", "", []string{"CONFIG_A=y\nCONFIG_B=y\nCONFIG_A=m\n"}, "CONFIG_B=y\nCONFIG_A=m\n"},
		{"comments kept", "# CONFIG_A is a comment\nCONFIG_B=y\n", []string{"CONFIG_B=n\n"},
			"# CONFIG_A is a comment\n# CONFIG_B is not set\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var frags []Fragment
			for _, f := range tc.fragments {
				frags = append(frags, mustFragment(t, "f", f))
			}
			if got := string(MergeConfig([]byte(tc.dotconfig), frags)); got != tc.want {
				t.Errorf("MergeConfig = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVerifyConfig(t *testing.T) {
	frags := []Fragment{
		mustFragment(t, "configs/base.config", "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=n\nCONFIG_NR=8\n"),
		mustFragment(t, "configs/net.config", "CONFIG_NET=y\nCONFIG_BPF_JIT=y\nCONFIG_NR=4\n"),
	}
	final := "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_NET=y\nCONFIG_NR=4\nCONFIG_BPF_JIT=y\n"
	if _, err := VerifyConfig([]byte(final), frags); err != nil {
		t.Errorf("VerifyConfig = %v, want nil", err)
	}

	bad := "CONFIG_A=m\nCONFIG_B=y\nCONFIG_NET=y\nCONFIG_NR=8\n# CONFIG_BPF_JIT is not set\n"
	_, err := VerifyConfig([]byte(bad), frags)
	var cm *ConfigMismatchError
	if !errors.As(err, &cm) {
		t.Fatalf("VerifyConfig = %v, want *ConfigMismatchError", err)
	}
	want := []string{
		"CONFIG_A: want y, got m (fragment configs/base.config:1)",
		"CONFIG_B: want not set, got y (fragment configs/base.config:2)",
		"CONFIG_NR: want 4, got 8 (fragment configs/net.config:3)",
		"CONFIG_BPF_JIT: want y, got not set (fragment configs/net.config:2)",
	}
	var got []string
	for _, m := range cm.Mismatches {
		got = append(got, m.String())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mismatches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, line := range want {
		if !strings.Contains(err.Error(), line) {
			t.Errorf("error %q lacks %q", err, line)
		}
	}

	_, absent := VerifyConfig([]byte("CONFIG_A=y\n"), frags[1:])
	if !strings.Contains(fmt.Sprint(absent), "CONFIG_NET: want y, got absent (fragment configs/net.config:1)") {
		t.Errorf("VerifyConfig = %v, want CONFIG_NET reported absent", absent)
	}
}
