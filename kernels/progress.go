package kernels

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	// PhaseWait is waiting for another process's lock; Line says whose.
	PhaseWait = "wait"
	// PhaseDone is the final report, for cache hits too.
	PhaseDone = "done"
)

// Progress is one progress report of a build.
type Progress struct {
	// Spec names the spec being built: a variant's base reports under its own name.
	Spec string
	// Phase is one of PhaseWait, PhaseExtract, PhasePatch, PhaseSeed, PhaseConfig, PhaseCompile, PhaseLink, PhaseDone.
	Phase string
	// Objects counts the objects compiled so far (kbuild "CC"/"AS" lines for .o files).
	Objects int
	// Total estimates how many objects the compile phase compiles in all,
	// from earlier builds of the spec (see estimateObjects); 0 when unknown.
	Total int
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
		// Not arch/x86/boot/startup/ (6.16+): early code built with the rest.
		return strings.HasPrefix(target, "arch/x86/boot/") && !strings.HasPrefix(target, "arch/x86/boot/startup/")
	}
	return false
}

// estimateObjects estimates how many objects make bzImage compiles in the
// work dir of spec s. A work dir holding a linked vmlinux has been built
// before: make recompiles only what changed, which no earlier count
// predicts, so the estimate is 0 (unknown). Otherwise make compiles every
// object, and the estimate is the most objects any published build of the
// spec compiled (build.json's objects): a build from scratch compiles them
// all, an incremental one fewer. A spec never built here gets the typical
// count of its base and flavour (typicalObjects), else 0.
func estimateObjects(l layout, s *Spec, work string) int {
	if _, err := os.Lstat(filepath.Join(work, "vmlinux")); err == nil {
		return 0
	}
	ents, _ := os.ReadDir(l.kernelsDir())
	most := 0
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), s.Name+"-") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(l.kernelsDir(), e.Name(), buildInfoFile))
		var info BuildInfo
		if err != nil || json.Unmarshal(data, &info) != nil || info.Spec != s.Name {
			continue
		}
		most = max(most, info.Objects)
	}
	if most == 0 {
		most = typicalObjects[typicalKey(s)]
	}
	return most
}

// typicalObjects is how many objects a build from scratch compiled, by
// Debian source package and flavour, with the lab's fragments on
// tinyconfig (cold builds on 2026-12-03): a cold machine's first build of
// a spec gets a total and an ETA. A spec of its own config may compile
// more or fewer; past the estimate the progress line drops it.
var typicalObjects = map[string]int{
	"linux-source-6.1":                1338,
	"linux-source-6.1.debug":          1355,
	"linux-source-6.1.kselftest-net":  1638,
	"linux-source-6.12":               1418,
	"linux-source-6.12.debug":         1436,
	"linux-source-6.12.kselftest-net": 1898,
	"linux-source-7.3":                1482,
	"linux-source-7.3.kselftest-net":  1970,
}

// typicalKey names s's base and flavour in typicalObjects; "" for a config
// not started from tinyconfig.
func typicalKey(s *Spec) string {
	if s.Config.Base != "" && s.Config.Base != defaultConfigBase {
		return ""
	}
	k := s.Base.Package
	if s.Config.Debug {
		k += debugSuffix
	}
	if len(s.Config.Selftests) > 0 {
		k += kselftestSuffix + strings.Join(s.Config.Selftests, "-")
	}
	return k
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
