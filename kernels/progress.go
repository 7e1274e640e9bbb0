package kernels

import (
	"regexp"
	"strings"
	"time"
)

// Build phases reported through Progress.Phase.
const (
	// PhaseExtract is unpacking the source tarball (first build only).
	PhaseExtract = "extract"
	// PhasePatch is applying the spec's patches to a copy of the source.
	PhasePatch = "patch"
	// PhaseSeed is copying the base spec's built work dir for a variant.
	PhaseSeed = "seed"
	// PhaseConfig is producing and checking the .config.
	PhaseConfig = "config"
	// PhaseCompile is make bzImage compiling objects.
	PhaseCompile = "compile"
	// PhaseLink is make bzImage linking vmlinux and the bzImage.
	PhaseLink = "link"
	// PhaseDone is the final report, for cache hits too.
	PhaseDone = "done"
)

// Progress is one progress report of a build.
type Progress struct {
	// Spec names the spec being built: a variant's base reports under its own name.
	Spec string
	// Phase is one of PhaseExtract, PhasePatch, PhaseSeed, PhaseConfig, PhaseCompile, PhaseLink, PhaseDone.
	Phase string
	// Objects counts the objects compiled so far (kbuild "CC"/"AS" lines for .o files).
	Objects int
	// Elapsed is the time since Build started.
	Elapsed time.Duration
	// Line is the output line that triggered the report, if any.
	Line string
}

// kbuildLineRe matches kbuild's quiet output: "  CC      kernel/fork.o".
var kbuildLineRe = regexp.MustCompile(`^ {2}([A-Z0-9_]+) +(\S+)$`)

// progressCounter follows make bzImage output to track phase and objects.
type progressCounter struct {
	phase   string
	objects int
}

// feed accounts for one output line.
func (c *progressCounter) feed(line string) {
	m := kbuildLineRe.FindStringSubmatch(line)
	if m == nil {
		return
	}
	tag, target := m[1], m[2]
	switch {
	case (tag == "CC" || tag == "AS") && strings.HasSuffix(target, ".o"):
		c.objects++
	case isLinkStep(tag, target):
		c.phase = PhaseLink
	}
}

// isLinkStep reports whether a kbuild step belongs to the final vmlinux/bzImage link.
func isLinkStep(tag, target string) bool {
	switch tag {
	case "LD", "AR", "MODPOST", "KSYMS", "SORTTAB", "SYSMAP":
		return strings.HasPrefix(target, "vmlinux") || strings.HasPrefix(target, ".tmp_vmlinux")
	case "BUILD", "OBJCOPY":
		return strings.HasPrefix(target, "arch/x86/boot/")
	}
	return false
}

// tail keeps the last n lines written to it.
type tail struct {
	lines []string
	next  int
	full  bool
}

// newTail returns a tail keeping n lines.
func newTail(n int) *tail { return &tail{lines: make([]string, n)} }

// add records one line, dropping the oldest when full.
func (t *tail) add(line string) {
	t.lines[t.next] = line
	t.next = (t.next + 1) % len(t.lines)
	if t.next == 0 {
		t.full = true
	}
}

// get returns the kept lines, oldest first.
func (t *tail) get() []string {
	if !t.full {
		return append([]string(nil), t.lines[:t.next]...)
	}
	return append(append([]string(nil), t.lines[t.next:]...), t.lines[:t.next]...)
}
