package stats

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

	"napilab/internal/safefs"
	"napilab/results"
)

// maxBaselineSize bounds the size of a baseline file LoadBaselines reads.
const maxBaselineSize = 32 << 20

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
	if err := results.WriteAtomic(path, append(data, '\n')); err != nil {
		return "", fmt.Errorf("failed to save baseline %s: %w", b.Name, err)
	}
	return path, nil
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
	data, err := safefs.ReadRegular(path, maxBaselineSize)
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
