package results

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"
)

// BaselineKernel is the Sample.Kernel label of a stored baseline's samples.
const BaselineKernel = "baseline"

// maxBaselineSize bounds the size of a baseline file LoadBaselines reads.
const maxBaselineSize = 32 << 20

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
	Kernel       Kernel            `json:"kernel"`           // Spec, Flavour, Key (content key), Release; no BzImage
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
		if CheckName(p) != nil {
			return fmt.Errorf("bad baseline name %q, want NAME or NAME@NAME, each [A-Za-z0-9][A-Za-z0-9._-]* (at most %d characters)", name, MaxNameLen)
		}
	}
	return nil
}

// DefaultBaselineName names a baseline after its scenario and kernel spec
// (the spec file's base name less .yaml), plus the flavour if any:
// "udp-flood@stock-6.1", "udp-flood@stock-6.1-debug".
func DefaultBaselineName(scenario string, k Kernel) string {
	spec := filepath.Base(k.Spec)
	spec = strings.TrimSuffix(strings.TrimSuffix(spec, ".yaml"), ".yml")
	if k.Flavour != "" {
		spec += "-" + k.Flavour
	}
	return scenario + "@" + spec
}

// SaveBaseline writes b to dir/NAME.json, creating dir and replacing a
// baseline of the same name atomically (temp file, fsync, rename, fsync of
// dir). The file is stable for version control: indented, samples sorted by
// metric and run, the time in whole UTC seconds, non-finite values dropped (Compare drops
// them too), no path of this machine (the kernel's BzImage is left out, an
// absolute spec path is cut to its base name).
func SaveBaseline(dir string, b *Baseline) (string, error) {
	if err := CheckBaselineName(b.Name); err != nil {
		return "", err
	}
	c := *b
	c.Kernel.BzImage = ""
	if filepath.IsAbs(c.Kernel.Spec) {
		c.Kernel.Spec = filepath.Base(c.Kernel.Spec)
	}
	c.Created = c.Created.UTC().Truncate(time.Second)
	c.Samples = nil
	for _, s := range b.Samples {
		if !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) {
			c.Samples = append(c.Samples, s)
		}
	}
	slices.SortStableFunc(c.Samples, func(x, y Sample) int {
		return cmp.Or(cmp.Compare(x.Metric, y.Metric), cmp.Compare(x.Run, y.Run))
	})
	data, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return "", fmt.Errorf("failed to encode baseline %s: %w", b.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("failed to create the baseline folder: %w", err)
	}
	path := filepath.Join(dir, b.Name+".json")
	if err := writeAtomic(path, append(data, '\n')); err != nil {
		return "", fmt.Errorf("failed to save baseline %s: %w", b.Name, err)
	}
	return path, nil
}

// writeAtomic replaces path with data: a temp file in the same folder,
// synced, renamed over path, and the folder synced.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// LoadBaselines reads every *.json in dir, sorted by name. A missing dir is
// an empty list; every bad file is reported, named (with the line of a JSON
// syntax error).
func LoadBaselines(dir string) ([]*Baseline, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("failed to list baselines: %w", err)
	}
	var list []*Baseline
	var errs *multierror.Error
	for _, p := range paths {
		b, err := loadBaseline(p)
		if err != nil {
			errs = multierror.Append(errs, err)
			continue
		}
		list = append(list, b)
	}
	if err := errs.ErrorOrNil(); err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(x, y *Baseline) int { return cmp.Compare(x.Name, y.Name) })
	return list, nil
}

func loadBaseline(path string) (*Baseline, error) {
	data, err := ReadRegular(path, maxBaselineSize)
	if err != nil {
		return nil, fmt.Errorf("failed to read baseline: %w", err)
	}
	var b Baseline
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, fmt.Errorf("%s:%d: bad baseline: %v", path, jsonLine(data, syn.Offset), err)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("%s:%d: bad baseline: %v", path, jsonLine(data, typ.Offset), err)
		}
		return nil, fmt.Errorf("%s: bad baseline: %v", path, err)
	}
	want := strings.TrimSuffix(filepath.Base(path), ".json")
	switch {
	case b.Name != want:
		return nil, fmt.Errorf("%s: bad baseline: its name is %q, the file says %q", path, b.Name, want)
	case CheckBaselineName(b.Name) != nil:
		return nil, fmt.Errorf("%s: %v", path, CheckBaselineName(b.Name))
	case b.Kernel.Key == "" || b.ScenarioHash == "":
		return nil, fmt.Errorf("%s: bad baseline: no kernel key or scenario hash", path)
	case len(b.Samples) == 0:
		return nil, fmt.Errorf("%s: bad baseline: no samples", path)
	}
	return &b, nil
}

// jsonLine is the 1-based line of a byte offset.
func jsonLine(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
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

// RemoveBaseline deletes dir/NAME.json.
func RemoveBaseline(dir, name string) error {
	if err := CheckBaselineName(name); err != nil {
		return err
	}
	err := os.Remove(filepath.Join(dir, name+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no baseline named %q in %s", name, dir)
	}
	if err != nil {
		return fmt.Errorf("failed to remove baseline %s: %w", name, err)
	}
	return nil
}
