package scenarios

import (
	"strings"
	"testing"
)

func TestUnsupported(t *testing.T) {
	s, err := Parse("x.yaml", []byte(base+"kernel: {min: \"6.12\", reason: no backpressure}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		release string
		skip    bool
	}{
		{"6.1.192", true},
		{"6.11.0-rc7+", true},
		{"5.15.0", true},
		{"6.12", false},
		{"6.12.117", false},
		{"6.13.0-rc1", false},
		{"7.0.0", false},
		{"", false},      // the release is unknown: run
		{"weird", false}, // nor does it parse: run
		{"6.2.99", true}, // minor compared as a number, not a string
		{"6.100.0", false},
	} {
		got := s.Unsupported(tc.release)
		if (got != "") != tc.skip {
			t.Errorf("Unsupported(%q) = %q, want skip %v", tc.release, got, tc.skip)
		}
		if tc.skip && got != "needs kernel 6.12 or newer: no backpressure" {
			t.Errorf("Unsupported(%q) = %q", tc.release, got)
		}
	}
	patch, err := Parse("x.yaml", []byte(base+"kernel: {min: 6.12.58, reason: the fix}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if patch.Unsupported("6.12.57") == "" || patch.Unsupported("6.12.58") != "" {
		t.Errorf("patch level ignored: %q %q", patch.Unsupported("6.12.57"), patch.Unsupported("6.12.58"))
	}
	none, _ := Parse("x.yaml", []byte(base), nil)
	if got := none.Unsupported("4.19.0"); got != "" {
		t.Errorf("no kernel: section, Unsupported = %q", got)
	}
}

func TestKernelReqErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"no reason", "kernel: {min: \"6.12\"}\n", "x.yaml:8:9: kernel min 6.12 needs a reason: what older kernels lack"},
		{"bad version", "kernel: {min: 6.x, reason: r}\n", `x.yaml:8:9: kernel min "6.x": want major.minor[.patch], like 6.12`},
		{"reason alone", "kernel: {reason: r}\n", "x.yaml:8:9: kernel: reason without min"},
		{"misspelt key", "kernel: {minimum: \"6.12\"}\n", `unknown field "minimum"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(base+tc.yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestExplainKernelReq(t *testing.T) {
	s, err := Parse("x.yaml", []byte(base+"kernel: {min: \"6.12\", reason: no backpressure}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	s.Explain(&b)
	if want := "kernels: 6.12 or newer (older ones print SKIP: no backpressure)"; !strings.Contains(b.String(), want) {
		t.Errorf("explain lacks %q:\n%s", want, b.String())
	}
}

func TestReleaseBefore(t *testing.T) {
	for _, tc := range []struct {
		release, min string
		want         bool
	}{
		{"6.1.192", "6.13", true}, {"6.12.117", "6.13", true}, {"7.3.4", "6.18", false},
		{"6.18.0-rc1", "6.18", false}, {"6.12", "6.12.1", true}, {"", "6.13", false}, {"6.1", "", false},
	} {
		if got := ReleaseBefore(tc.release, tc.min); got != tc.want {
			t.Errorf("ReleaseBefore(%q, %q) = %v, want %v", tc.release, tc.min, got, tc.want)
		}
	}
}
