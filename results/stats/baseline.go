package stats

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"napilab/internal/names"
	"napilab/results"
)

// BaselineKernel is the Sample.Kernel label of a stored baseline's samples.
const BaselineKernel = "baseline"

// Host is the host class a baseline is valid on.
type Host struct {
	CPU   string `json:"cpu"`   // /proc/cpuinfo "model name"
	Cores int    `json:"cores"` // online CPUs
	QEMU  string `json:"qemu"`  // QEMU's version, e.g. "7.2.22"
	Accel string `json:"accel"` // tcg or kvm
}

// Mismatch returns "" when h and o are the same class, else what differs,
// h's value first: "QEMU 7.2.22 vs 8.2.1, cores 2 vs 8".
func (h Host) Mismatch(o Host) string {
	var d []string
	if h.QEMU != o.QEMU {
		d = append(d, fmt.Sprintf("QEMU %s vs %s", h.QEMU, o.QEMU))
	}
	if h.Accel != o.Accel {
		d = append(d, fmt.Sprintf("accel %s vs %s", h.Accel, o.Accel))
	}
	if h.Cores != o.Cores {
		d = append(d, fmt.Sprintf("cores %d vs %d", h.Cores, o.Cores))
	}
	if h.CPU != o.CPU {
		d = append(d, fmt.Sprintf("CPU %q vs %q", h.CPU, o.CPU))
	}
	return strings.Join(d, ", ")
}

// Baseline is one kernel's recorded runs of one scenario on one host class.
type Baseline struct {
	Name         string            `json:"name"`             // file name without .json (see CheckBaselineName)
	Kernel       results.Kernel    `json:"kernel"`           // Spec, Flavour, Key (content key), Release; no BzImage
	Scenario     string            `json:"scenario"`         // the scenario's name
	ScenarioHash string            `json:"scenario_hash"`    // what the samples depend on (the resolved scenario less its perf block)
	Params       map[string]string `json:"params,omitempty"` // the scenario's parameters, for humans (the hash covers them)
	Host         Host              `json:"host"`             // where the runs ran
	Repeat       int               `json:"repeat"`           // runs recorded
	Created      time.Time         `json:"created"`          // when it was recorded
	Samples      []Sample          `json:"samples"`          // Kernel field = BaselineKernel
}

// CheckBaselineName is the rule for baseline names: one or two CheckName
// names joined by '@' ("udp-flood@stock-6.1"), so a name is one safe file
// name.
func CheckBaselineName(name string) error {
	parts := strings.Split(name, "@")
	if len(parts) > 2 {
		return fmt.Errorf("bad baseline name %q: at most one '@'", name)
	}
	for _, p := range parts {
		if names.Check(p) != nil {
			return fmt.Errorf("bad baseline name %q, want NAME or NAME@NAME, each [A-Za-z0-9][A-Za-z0-9._-]* (at most %d characters)", name, names.MaxLen)
		}
	}
	return nil
}

// DefaultBaselineName names a baseline after its scenario and kernel spec
// (the spec file's base name less .yaml), plus the flavour if any:
// "udp-flood@stock-6.1", "udp-flood@stock-6.1-debug".
func DefaultBaselineName(scenario string, k results.Kernel) string {
	spec := filepath.Base(k.Spec)
	spec = strings.TrimSuffix(strings.TrimSuffix(spec, ".yaml"), ".yml")
	if k.Flavour != "" {
		spec += "-" + k.Flavour
	}
	return scenario + "@" + spec
}

// FindBaseline returns the newest baseline of list (by Created) that fits
// a run of the kernel with kernelKey, the scenario with scenarioHash (which
// covers its params), on host; name "" matches any name, so callers pass
// only the scenario's baselines then. When none fits it returns nil and
// one reason per candidate, or "no baseline named ..." when there is none.
func FindBaseline(list []*Baseline, name, kernelKey, scenarioHash string, host Host) (*Baseline, []string) {
	var best *Baseline
	var reasons []string
	for _, b := range list {
		if name != "" && b.Name != name {
			continue
		}
		var why []string
		if b.Kernel.Key != kernelKey {
			why = append(why, fmt.Sprintf("recorded for kernel key %s, this kernel is %s", shortKey(b.Kernel.Key), shortKey(kernelKey)))
		}
		if b.ScenarioHash != scenarioHash {
			why = append(why, "the scenario changed since it was recorded")
		}
		if d := b.Host.Mismatch(host); d != "" {
			why = append(why, "host class differs: "+d)
		}
		if len(why) > 0 {
			reasons = append(reasons, b.Name+": "+strings.Join(why, "; "))
			continue
		}
		if best == nil || b.Created.After(best.Created) {
			best = b
		}
	}
	switch {
	case best != nil:
		return best, nil
	case len(reasons) > 0:
		return nil, reasons
	case name != "":
		return nil, []string{fmt.Sprintf("no baseline named %q", name)}
	}
	return nil, []string{"no baselines stored"}
}

// shortKey shortens a content key for messages.
func shortKey(k string) string {
	if k == "" {
		return "(none)"
	}
	if len(k) > 12 {
		return k[:12]
	}
	return k
}
