package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-multierror"

	"napilab/results"
	"napilab/results/stats"
)

// The reports of a run folder and the files of a comparison folder.
const (
	JUnitFile       = "junit.xml"
	KTAPFile        = "result.ktap"
	KCIDBFile       = "kcidb.json"
	HTMLFile        = "report.html"
	CompareFile     = "compare.json"
	CompareHTMLFile = "compare.html"
)

// Save writes what a finished run leaves in its folder dir: junit.xml and
// the reports (WriteRun), then result.json last, atomically
// (results.Result.Write). A report that cannot be written makes r ERROR
// (its reason added) before result.json is, and the reports are written
// again to say so; a result.json that cannot be written makes r ERROR too,
// and is then written again saying so, or removed. So the result.json in
// dir always holds the verdict r has when Save returns, the one lab exits
// with. It returns the write errors.
func Save(dir string, r *results.Result) error {
	err := writeAll(dir, r)
	if err != nil {
		markError(r, err)
		writeAll(dir, r) // they say ERROR too, as far as they can
	}
	werr := r.Write(dir)
	if werr == nil {
		return err
	}
	markError(r, werr)
	writeAll(dir, r)
	if r.Write(dir) != nil {
		// No result.json rather than one that disagrees with r.
		os.Remove(filepath.Join(dir, results.ResultFile))
	}
	return multierror.Append(err, werr).ErrorOrNil()
}

// writeAll writes junit.xml and the reports, each attempted.
func writeAll(dir string, r *results.Result) error {
	errs := multierror.Append(WriteJUnit(filepath.Join(dir, JUnitFile), r), WriteRun(dir, r))
	return errs.ErrorOrNil()
}

// markError turns r into ERROR for err.
func markError(r *results.Result, err error) {
	r.Verdict = results.Error
	r.Reasons = append(r.Reasons, err.Error())
}

// WriteRun writes the human and machine reports of a run next to its
// result.json: result.ktap, kcidb.json and report.html. The HTML page uses
// dir/samples.jsonl when it is there. Every report is attempted; the
// errors of those that failed are returned together.
func WriteRun(dir string, r *results.Result) error {
	samples, err := results.ReadSamples(filepath.Join(dir, results.SamplesFile))
	var errs *multierror.Error
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = multierror.Append(errs, err) // still render what was read
	}
	errs = multierror.Append(errs,
		repWriteFile(filepath.Join(dir, KTAPFile), func(w io.Writer) error { return WriteKTAP(w, r) }),
		repWriteFile(filepath.Join(dir, KCIDBFile), func(w io.Writer) error { return WriteKCIDB(w, r) }),
		repWriteFile(filepath.Join(dir, HTMLFile), func(w io.Writer) error { return WriteHTML(w, r, samples) }))
	return errs.ErrorOrNil()
}

// IsComparison tells whether dir is a comparison folder (it has compare.json).
func IsComparison(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, CompareFile))
	return err == nil
}

// comparisonRun matches the run folders of a comparison: a-1, b-1, a-2, ...
var comparisonRun = regexp.MustCompile(`^([ab])-(\d+)$`)

// LoadComparison reads a comparison folder: compare.json and the results of
// its a-N and b-N run folders, each side in run order. A run folder without
// a readable result.json is reported in the error and left out.
func LoadComparison(dir string) (*stats.Comparison, []*results.Result, []*results.Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, CompareFile))
	if err != nil {
		return nil, nil, nil, err
	}
	var c stats.Comparison
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, CompareFile), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	type run struct {
		side string
		n    int
		r    *results.Result
	}
	var runs []run
	var errs *multierror.Error
	for _, e := range entries {
		m := comparisonRun.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		r, err := results.Read(filepath.Join(dir, e.Name(), results.ResultFile))
		if err != nil {
			errs = multierror.Append(errs, err)
			continue
		}
		n, _ := strconv.Atoi(m[2])
		runs = append(runs, run{m[1], n, r})
	}
	slices.SortFunc(runs, func(x, y run) int { return cmp.Compare(x.n, y.n) })
	var as, bs []*results.Result
	for _, r := range runs {
		if r.side == "a" {
			as = append(as, r.r)
		} else {
			bs = append(bs, r.r)
		}
	}
	return &c, as, bs, errs.ErrorOrNil()
}

// WriteComparison writes compare.html in a comparison folder and the
// reports of each of its run folders (compare.html links to them).
func WriteComparison(dir string) error {
	c, as, bs, err := LoadComparison(dir)
	if c == nil {
		return err
	}
	errs := multierror.Append(nil, err)
	entries, err := os.ReadDir(dir)
	errs = multierror.Append(errs, err)
	for _, e := range entries {
		if !e.IsDir() || !comparisonRun.MatchString(e.Name()) {
			continue
		}
		run := filepath.Join(dir, e.Name())
		if r, err := results.Read(filepath.Join(run, results.ResultFile)); err == nil {
			errs = multierror.Append(errs, WriteRun(run, r))
		}
	}
	errs = multierror.Append(errs, repWriteFile(filepath.Join(dir, CompareHTMLFile),
		func(w io.Writer) error { return WriteCompareHTML(w, c, as, bs) }))
	return errs.ErrorOrNil()
}

// Folder is one entry of a results folder as ListFolders sees it.
type Folder struct {
	Path       string          // the folder
	Comparison bool            // a comparison folder rather than a run folder
	Time       time.Time       // when the run (the comparison's first run) started
	Scenario   string          // the scenario's name
	Kernel     string          // the kernel spec; "A vs B" labels for a comparison
	Verdict    results.Verdict // the run's verdict; the worst of its runs for a comparison
	Note       string          // a comparison's figures beyond the noise; why a folder could not be read
}

// folderStamp is the time prefix lab gives run and comparison folders.
var folderStamp = regexp.MustCompile(`^(\d{8}-\d{6})-`)

// ListFolders lists the run and comparison folders directly under root,
// newest first. Folders that are neither are left out; a folder whose
// files cannot be read is listed with the error in Note.
func ListFolders(root string) ([]Folder, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []Folder
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		f := Folder{Path: dir}
		if m := folderStamp.FindStringSubmatch(e.Name()); m != nil {
			f.Time, _ = time.ParseInLocation("20060102-150405", m[1], time.Local)
		}
		switch {
		case IsComparison(dir):
			f.Comparison = true
			c, as, bs, err := LoadComparison(dir)
			if c == nil {
				f.Note = err.Error()
				break
			}
			f.Kernel = c.A + " vs " + c.B
			f.Verdict = results.Pass
			beyond := 0
			for _, row := range c.Rows {
				if row.Beyond {
					beyond++
				}
			}
			f.Note = fmt.Sprintf("%d of %d figures beyond noise, %d+%d runs", beyond, len(c.Rows), len(as), len(bs))
			for _, r := range append(as, bs...) {
				f.Scenario = r.Scenario
				if r.Verdict.Worse(f.Verdict) {
					f.Verdict = r.Verdict
				}
				if !r.Started.IsZero() && (f.Time.IsZero() || r.Started.Before(f.Time)) {
					f.Time = r.Started
				}
			}
		default:
			r, err := results.Read(filepath.Join(dir, results.ResultFile))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				f.Note = err.Error()
				break
			}
			f.Scenario, f.Kernel, f.Verdict = r.Scenario, r.Kernel.Spec, r.Verdict
			if !r.Started.IsZero() {
				f.Time = r.Started
			}
		}
		if f.Time.IsZero() {
			if info, err := e.Info(); err == nil {
				f.Time = info.ModTime()
			}
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(x, y Folder) int {
		if c := y.Time.Compare(x.Time); c != 0 {
			return c
		}
		return cmp.Compare(y.Path, x.Path)
	})
	return out, nil
}

// repWriteFile creates path and fills it with write.
func repWriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return f.Close()
}

// repKeys returns m's keys in order.
func repKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
