package patches

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"napilab/internal/sandbox"
)

// State is how a patch relates to a tree.
type State string

// Patch states reported by Check and Apply.
const (
	// Applies means every hunk applies at its place.
	Applies State = "applies"
	// AppliesWithOffset means every hunk applies, some at an offset or with fuzz (see Result.Hunks).
	AppliesWithOffset State = "applies-with-offset"
	// AlreadyPresent means the patch does not apply but its reverse does: the tree has it.
	AlreadyPresent State = "already-present"
	// Conflicts means a hunk failed or a file to patch is missing (see Result.Hunks, Result.Missing).
	Conflicts State = "conflicts"
	// Malformed means GNU patch could not read the patch (see Result.Detail).
	Malformed State = "malformed"
)

// OK reports whether a patch in this state leaves the tree patched as intended.
func (s State) OK() bool { return s == Applies || s == AppliesWithOffset }

// Result is what checking or applying one patch found.
type Result struct {
	// Patch is the patch checked.
	Patch Patch
	// State is the verdict.
	State State
	// Hunks lists the hunks applied at an offset or with fuzz, and the failed ones.
	Hunks []Hunk
	// Missing lists the files the patch modifies that the tree lacks.
	Missing []string
	// Reversed lists the files whose change looks already applied.
	Reversed []string
	// Files lists the files the patch touches, relative to the tree.
	Files []string
	// Detail is GNU patch's output.
	Detail string
	// Reason is GNU patch's complaint about a malformed patch.
	Reason string
}

// Summary says in one line what happened and where:
// "applies with offset +3 lines (net/core/dev.c hunk #1 at 130)".
func (r Result) Summary() string {
	switch r.State {
	case AppliesWithOffset:
		var what []string
		for _, h := range r.Hunks {
			if h.Offset != 0 {
				what = append(what, fmt.Sprintf("offset %+d lines (%s hunk #%d at %d)", h.Offset, h.File, h.Number, h.Line))
			}
			if h.Fuzz != 0 {
				what = append(what, fmt.Sprintf("fuzz %d (%s hunk #%d at %d)", h.Fuzz, h.File, h.Number, h.Line))
			}
		}
		return "applies with " + strings.Join(what, ", ")
	case AlreadyPresent:
		return "already present (the reverse applies)"
	case Conflicts:
		var what []string
		for _, h := range r.Hunks {
			if h.Failed {
				what = append(what, h.String())
			}
		}
		for _, f := range r.Missing {
			what = append(what, "can't find file to patch "+f)
		}
		for _, f := range r.Reversed {
			what = append(what, f+" already has this change")
		}
		if len(what) == 0 {
			return "conflicts (see patch output)"
		}
		return "conflicts: " + strings.Join(what, "; ")
	case Malformed:
		return "malformed: " + r.Reason
	}
	return string(r.State)
}

// String renders "patch 2 (softirq: let ksoftirqd do its job): applies".
func (r Result) String() string {
	return fmt.Sprintf("patch %d (%s): %s", r.Patch.Index, r.Patch.Subject, r.Summary())
}

// ApplyError reports a series that did not apply; it carries every patch's result.
type ApplyError struct {
	// Series names the series.
	Series string
	// Results holds one result per patch, in order.
	Results []Result
}

// Error names each patch that did not apply and why.
func (e *ApplyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "failed to apply patch series %s:", e.Series)
	for _, r := range e.Results {
		if !r.State.OK() {
			fmt.Fprintf(&b, "\n\t%s (%s)", r, r.Patch.File)
		}
	}
	return b.String()
}

// Check reports how each patch of s applies to tree, in order, each on top of
// the ones before it. Patches that do not apply are skipped, so the ones after
// them are checked without them. The tree is never modified: the patches go
// into a hardlink copy next to it that Check removes. The error is only for
// failures to run the check, not for patches that do not apply.
func Check(ctx context.Context, s *Series, tree string) ([]Result, error) {
	tree = filepath.Clean(tree)
	scratch, err := os.MkdirTemp(filepath.Dir(tree), fmt.Sprintf(".napilab-check-pid%d-*", os.Getpid())) // see kernels.TempPattern
	if err != nil {
		return nil, fmt.Errorf("failed to create scratch copy: %w", err)
	}
	defer os.RemoveAll(scratch)
	if err := linkCopy(ctx, tree, scratch); err != nil {
		return nil, err
	}
	return applyAll(ctx, s, scratch)
}

// Apply writes tree with every patch of s applied to dst, which must not
// exist. It works in a hardlink copy next to dst and renames it into place
// only when every patch applied (offsets and fuzz are fine), so dst either
// holds the whole series or does not exist; tree is never modified. When a
// patch conflicts, is already present or is malformed, the error is an
// *ApplyError with every patch's result. The results say where offsets and
// fuzz were needed.
func Apply(ctx context.Context, s *Series, tree, dst string) ([]Result, error) {
	dst = filepath.Clean(dst)
	if _, err := os.Lstat(dst); err == nil {
		return nil, fmt.Errorf("failed to apply patch series %s: %s already exists", s.Name, dst)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("failed to apply patch series %s: %w", s.Name, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("failed to create patched tree: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := linkCopy(ctx, filepath.Clean(tree), tmp); err != nil {
		return nil, err
	}
	results, err := applyAll(ctx, s, tmp)
	if err != nil {
		return results, err
	}
	for _, r := range results {
		if !r.State.OK() {
			return results, &ApplyError{Series: s.Name, Results: results}
		}
	}
	if err := sandbox.Disown(tmp); err != nil {
		return results, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return results, fmt.Errorf("failed to move patched tree into place: %w", err)
	}
	return results, nil
}

// applyAll checks and applies each patch in turn to dir, which is modified.
func applyAll(ctx context.Context, s *Series, dir string) ([]Result, error) {
	var results []Result
	for _, p := range s.Patches {
		r, err := applyOne(ctx, dir, p)
		if err != nil {
			return results, fmt.Errorf("failed to apply patch %d (%s) of %s: %w", p.Index, p.Subject, p.File, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// applyOne dry-runs p on dir and, if every hunk applies, applies it for real;
// if not, a dry run of the reverse tells an already present patch from a conflict.
func applyOne(ctx context.Context, dir string, p Patch) (Result, error) {
	r := Result{Patch: p}
	files, err := p.Files()
	if err != nil {
		return r, err
	}
	out, code, err := patch(ctx, dir, p, "--dry-run")
	if err != nil {
		return r, err
	}
	o := parseOutput(out, p.Strip)
	if err := checkOutputFiles(o.files, files, out); err != nil {
		return r, err
	}
	r.Detail, r.Files, r.Hunks, r.Missing, r.Reversed = out, files, o.hunks, o.missing, o.reversed
	switch {
	case code == 0:
		r.State = Applies
		for _, h := range o.hunks {
			if h.Offset != 0 || h.Fuzz != 0 {
				r.State = AppliesWithOffset
			}
		}
		out, code, err := patch(ctx, dir, p)
		if err != nil {
			return r, err
		}
		if code != 0 {
			return r, fmt.Errorf("patch applied in a dry run but failed for real (exit code %d):\n%s", code, out)
		}
		if err := checkOutputFiles(parseOutput(out, p.Strip).files, files, out); err != nil {
			return r, err
		}
	case o.trouble != "":
		r.State, r.Reason = Malformed, o.trouble
	default:
		r.State = Conflicts
		_, rcode, err := patch(ctx, dir, p, "--dry-run", "--reverse")
		if err != nil {
			return r, err
		}
		if rcode == 0 {
			r.State, r.Hunks, r.Reversed = AlreadyPresent, nil, nil
		}
	}
	return r, nil
}

// checkOutputFiles makes sure every file GNU patch says it patched is one
// the diff names (Patch.Files): patch's output is never used as a path, but
// a name there that the diff does not give means the two readings differ.
func checkOutputFiles(reported, files []string, out string) error {
	for _, f := range reported {
		if !slices.Contains(files, f) {
			return fmt.Errorf("GNU patch reports patching %q, which is not a file name the diff gives (%q):\n%s", f, files, out)
		}
	}
	return nil
}

// patch runs GNU patch on dir with p on stdin. --forward keeps --batch from
// guessing that a patch is reversed and applying it backwards.
func patch(ctx context.Context, dir string, p Patch, extra ...string) (string, int, error) {
	argv := append([]string{"patch", "-p" + strconv.Itoa(p.Strip), "--batch", "--forward", "--no-backup-if-mismatch"}, extra...)
	return run(ctx, dir, p.Diff, true, argv...)
}
