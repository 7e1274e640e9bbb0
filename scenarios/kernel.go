package scenarios

import (
	"fmt"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// KernelReq says which kernels a scenario applies to. On an older kernel
// lab run does not boot it and prints a SKIP line with the reason instead.
type KernelReq struct {
	// Min is the oldest kernel version (major.minor[.patch]) that has the
	// code the scenario checks: "6.12".
	Min string `yaml:"min"`
	// Reason says what older kernels lack; required with min.
	Reason string `yaml:"reason"`
	Pos    Pos    `yaml:"-"`
}

// UnmarshalYAML records the line.
func (k *KernelReq) UnmarshalYAML(n *yaml.Node) error {
	type raw KernelReq
	k.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(k))
}

var kernelMin = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)

// releaseVersion reads the leading major.minor[.patch] of a kernel
// release ("6.12.117", "6.1.0-rc3+"); ok is false when there is none.
var releaseVersion = regexp.MustCompile(`^([0-9]+)\.([0-9]+)(?:\.([0-9]+))?`)

// version parses major.minor[.patch] at the start of s.
func version(s string) (v [3]int, ok bool) {
	m := releaseVersion.FindStringSubmatch(s)
	if m == nil {
		return v, false
	}
	for i, part := range m[1:] {
		if part != "" {
			v[i], _ = strconv.Atoi(part)
		}
	}
	return v, true
}

// Unsupported says why the scenario does not apply to a kernel of the
// given release (uname -r), or returns "" when it does. A release that
// does not parse runs: the lab cannot tell, and a run says more than a skip.
func (s *Scenario) Unsupported(release string) string {
	if s.Kernel.Min == "" || !ReleaseBefore(release, s.Kernel.Min) {
		return ""
	}
	return fmt.Sprintf("needs kernel %s or newer: %s", s.Kernel.Min, s.Kernel.Reason)
}

// ReleaseBefore says whether the kernel release (uname -r, "6.12.117")
// is older than min (major.minor[.patch]); false when either does not parse.
func ReleaseBefore(release, min string) bool {
	got, ok := version(release)
	want, wok := version(min)
	if !ok || !wok {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return got[i] < want[i]
		}
	}
	return false
}

// kernelReq checks kernel:.
func (k *checker) kernelReq() {
	r := k.s.Kernel
	if r.Min == "" {
		if r.Reason != "" {
			k.c.add(r.Pos, "kernel: reason without min")
		}
		return
	}
	if !kernelMin.MatchString(r.Min) {
		k.c.add(r.Pos, "kernel min %q: want major.minor[.patch], like 6.12", r.Min)
	}
	if r.Reason == "" {
		k.c.add(r.Pos, "kernel min %s needs a reason: what older kernels lack", r.Min)
	}
}
