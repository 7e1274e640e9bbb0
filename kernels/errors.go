package kernels

import (
	"fmt"
	"io/fs"
	"strings"

	"napilab/patches"
)

// SpecError points at a problem in a spec or fragment file.
type SpecError struct {
	// Path is the file at fault.
	Path string
	// Line is the 1-based line at fault, or 0 when the whole file is.
	Line int
	// Msg says what is wrong.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

// Error renders "path:line: msg".
func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Unwrap returns the underlying error.
func (e *SpecError) Unwrap() error { return e.Err }

// MissingTarballError reports that the spec's source tarball is not on disk.
type MissingTarballError struct {
	// Path is the tarball the spec names.
	Path string
	// Package is the Debian package that provides it, if the spec says.
	Package string
	// Suite is the suite the lab fetches Package from, if the spec says.
	Suite string
}

// Error names the file and, when known, the package to install or fetch.
func (e *MissingTarballError) Error() string {
	msg := fmt.Sprintf("kernel source tarball %s not found", e.Path)
	if e.Suite != "" {
		msg += fmt.Sprintf(": not fetched yet (lab kernel build fetches %s from %s)", e.Package, e.Suite)
	} else if e.Package != "" {
		msg += ": install it with: apt-get install " + e.Package
	}
	return msg
}

// Unwrap makes errors.Is(err, fs.ErrNotExist) hold.
func (e *MissingTarballError) Unwrap() error { return fs.ErrNotExist }

// MissingToolError reports a host tool the build needs that is not on PATH.
type MissingToolError struct {
	// Tool is the missing program, e.g. flex.
	Tool string
	// Package is the Debian package providing Tool.
	Package string
}

// Error names the tool and the package to install.
func (e *MissingToolError) Error() string {
	return fmt.Sprintf("required tool %q not found in PATH: install it with: apt-get install %s", e.Tool, e.Package)
}

// PatchError reports a spec's patches that did not apply to its source
// tarball; it is a spec fault.
type PatchError struct {
	// Spec is the spec whose patches failed.
	Spec string
	// Results holds every patch's result in order; Summary says where it failed.
	Results []patches.Result
	// Err is the underlying *patches.ApplyError.
	Err error
}

// Error names each patch that did not apply, its file and the failed hunks.
func (e *PatchError) Error() string { return e.Err.Error() }

// Unwrap returns the *patches.ApplyError.
func (e *PatchError) Unwrap() error { return e.Err }

// BuildError reports a failed make run. It carries the evidence: exit code,
// root cause, log tail. It is not a test verdict: the scenario never ran,
// and the cause may be the tree (a compile error) or the host (a killed
// compiler, a full disk), so lab run reports it as ERROR and lab bisect
// skips the candidate, as git bisect skip does.
type BuildError struct {
	// Target is the make target that failed, e.g. bzImage.
	Target string
	// ExitCode is make's exit code (-1 when killed by a signal).
	ExitCode int
	// Cause is the first output line containing "error:", if any.
	Cause string
	// Tail holds the last output lines.
	Tail []string
	// Log is the path of the full build log, if one was written.
	Log string
}

// Error renders the target, exit code and root cause.
func (e *BuildError) Error() string {
	msg := fmt.Sprintf("make %s failed with exit code %d", e.Target, e.ExitCode)
	if e.Cause != "" {
		msg += ": " + e.Cause
	} else if n := len(e.Tail); n > 0 {
		msg += ": " + strings.TrimSpace(e.Tail[n-1])
	}
	return msg
}
