package kernels

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"

	"napilab/internal/names"
	"napilab/internal/safefs"
	"napilab/patches"
)

// Spec describes one kernel: its source tarball, its config and its patches.
type Spec struct {
	// Name keys the work dir and the artifact dir.
	Name string
	// Description is free text for humans.
	Description string
	// Base is the source tarball the kernel is built from.
	Base Base
	// Config says how the .config is produced.
	Config Config
	// Patches are patch entries, resolved against the spec's dir, applied in
	// order: each a patch file, a quilt folder, a git format-patch folder or an
	// mbox (see package patches). A spec that extends another applies the
	// parent's patches first.
	Patches []string
	// Cmdline holds extra kernel command-line words for guests of this kernel.
	Cmdline []string
	// Modes are the perf modes the series is about (threaded, softirq, ...):
	// a perf scenario runs in each of its modes listed here, or in all of
	// them when none is. A variant inherits its parent's unless it names its own.
	Modes []string
	// Extends is the resolved path of the parent spec, or empty.
	Extends string
	// Path is the file the spec was loaded from.
	Path string
}

// Base names the kernel source tarball.
type Base struct {
	// Tarball is the path of the source tarball, e.g. /usr/src/linux-source-6.1.tar.xz.
	// With Suite set it is the installed path, /<Member>, until the build
	// resolves it to the copy fetched into the cache when that is missing.
	Tarball string
	// Package is the Debian package providing Tarball, named in install hints.
	Package string
	// Suite is the Debian suite the lab fetches Package from when the host
	// has not installed it (e.g. trixie-backports); empty means never fetch.
	Suite string
	// Member is the tarball's path inside Package, with Suite set:
	// base.tarball, default usr/src/<package>.tar.xz.
	Member string
	// Tree is a local source tree built as it is on disk (base.tree): a
	// plain folder, or a git checkout with its uncommitted and untracked
	// (not ignored) files. It is exported into the cache, never built in.
	Tree string
	// Git is a git repository built at Rev (base.git); its work tree is not read.
	Git string
	// Rev is the revision of Git: a commit, tag or branch (default HEAD).
	Rev string
}

// IsTree reports whether the base is a local tree or a git repository
// rather than a tarball.
func (b Base) IsTree() bool { return b.Tree != "" || b.Git != "" }

// Dir is the tree or repository of a tree base.
func (b Base) Dir() string {
	if b.Git != "" {
		return b.Git
	}
	return b.Tree
}

// Config says how to produce the kernel .config.
type Config struct {
	// Base is the make target producing the starting .config; it defaults to tinyconfig.
	Base string
	// Fragments are fragment paths, resolved against the spec's dir, merged in order (later wins).
	Fragments []string
	// Selftests names kselftest collections (e.g. "net") whose own config
	// fragment, tools/testing/selftests/<c>/config in the source, is merged
	// after Fragments, then the lab's configs/kselftest.config. The
	// collections' settings are advisory: those olddefconfig drops are
	// recorded in BuildInfo.Unmet rather than failing the build.
	Selftests []string
	// Debug merges configs/sanitizers.config last (the debug flavour, see
	// WithDebug); specs do not set it, --flavour and scenarios do.
	Debug bool
}

// maxSpecSize bounds a spec file.
const maxSpecSize = 1 << 20

// defaultConfigBase is the make target used when a spec names none.
const defaultConfigBase = "tinyconfig"

// ConfigBases are the make targets config.base may name: the small
// configs a lab guest starts from and the usual architecture defaults.
// Anything else (install, clean, localmodconfig reading the host's modules)
// has no business in a kernel spec.
var ConfigBases = []string{"tinyconfig", "allnoconfig", "alldefconfig", "defconfig", "x86_64_defconfig", "kvm_guest.config"}

// LoadSpec reads, resolves (extends, relative paths) and validates the spec at path.
func LoadSpec(path string) (*Spec, error) {
	spec, err := loadSpec(path, nil)
	if err != nil {
		return nil, err
	}
	if spec.Base.Tarball == "" && !spec.Base.IsTree() {
		return nil, &SpecError{Path: path, Msg: "base needs tarball, package and suite, tree or git"}
	}
	if spec.Config.Base == "" {
		spec.Config.Base = defaultConfigBase
	}
	return spec, nil
}

// loadSpec loads one file and its extends chain; chain holds the files already being loaded.
func loadSpec(path string, chain []string) (*Spec, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve %s: %w", path, err)
	}
	if slices.Contains(chain, abs) {
		return nil, &SpecError{Path: path, Msg: "extends cycle"}
	}
	data, err := safefs.ReadRegular(path, maxSpecSize)
	if err != nil {
		return nil, fmt.Errorf("failed to read spec: %w", err)
	}
	f, err := decodeSpec(path, data)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	spec := &Spec{}
	if f.Extends.Value != "" {
		parentPath := resolvePath(dir, f.Extends.Value)
		parent, err := loadSpec(parentPath, append(chain, abs))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: failed to load extended spec: %w", path, f.Extends.Line, err)
		}
		spec = parent
		spec.Extends = parentPath
	}
	spec.Path = path
	spec.Name = f.Name
	spec.Description = f.Description
	var errs *multierror.Error
	if f.Base.Tree != "" || f.Base.Git != "" || f.Base.Rev != "" {
		base, err := treeBase(path, f.BaseLine, dir, f.Base.Tree, f.Base.Git, f.Base.Rev, f.Base.Tarball+f.Base.Package+f.Base.Suite != "")
		errs = multierror.Append(errs, err)
		spec.Base = base
	} else if f.Base.Suite != "" {
		// The tarball is a member of the package, fetched when not installed.
		if err := checkFetchedBase(path, f.Base.Package, f.Base.Suite, f.Base.Tarball); err != nil {
			errs = multierror.Append(errs, err)
		}
		member := f.Base.Tarball
		if member == "" {
			member = "usr/src/" + f.Base.Package + ".tar.xz"
		}
		spec.Base = Base{Package: f.Base.Package, Suite: f.Base.Suite, Member: member, Tarball: "/" + member}
	} else {
		if f.Base.Tarball != "" {
			spec.Base = Base{Tarball: resolvePath(dir, f.Base.Tarball), Package: spec.Base.Package}
		}
		if f.Base.Package != "" {
			spec.Base.Package = f.Base.Package
		}
	}
	if f.Config.Base.Value != "" {
		spec.Config.Base = f.Config.Base.Value
	}
	spec.Cmdline = append(spec.Cmdline, f.Cmdline...)
	if len(f.Modes) > 0 {
		spec.Modes = nil
	}
	for _, m := range f.Modes {
		if err := names.Check(m.Value); err != nil {
			errs = multierror.Append(errs, &SpecError{Path: path, Line: m.Line, Msg: fmt.Sprintf("modes: %q: %v", m.Value, err)})
			continue
		}
		spec.Modes = append(spec.Modes, m.Value)
	}
	spec.Config.Selftests = append(spec.Config.Selftests, f.Config.Selftests...)

	if err := names.Check(f.Name); err != nil {
		errs = multierror.Append(errs, &SpecError{Path: path, Line: f.NameLine, Msg: err.Error()})
	}
	if b := f.Config.Base; b.Value != "" && !slices.Contains(ConfigBases, b.Value) {
		errs = multierror.Append(errs, &SpecError{Path: path, Line: b.Line,
			Msg: fmt.Sprintf("config.base %q: want one of %s", b.Value, strings.Join(ConfigBases, ", "))})
	}
	for _, c := range f.Config.Selftests {
		if !ValidCollection(c) {
			errs = multierror.Append(errs, &SpecError{Path: path,
				Msg: fmt.Sprintf("config.selftests: bad collection %q, want a folder of tools/testing/selftests such as net or drivers/net", c)})
		}
	}
	for _, frag := range f.Config.Fragments {
		p, err := existingFile(path, dir, "fragment", frag)
		errs = multierror.Append(errs, err)
		spec.Config.Fragments = append(spec.Config.Fragments, p)
	}
	for _, patch := range f.Patches {
		p, err := existingFile(path, dir, "patch", patch)
		if err == nil {
			if _, lerr := patches.Load(p); lerr != nil {
				err = &SpecError{Path: path, Line: patch.Line, Msg: fmt.Sprintf("patch %q: %v", patch.Value, lerr), Err: lerr}
			}
		}
		errs = multierror.Append(errs, err)
		spec.Patches = append(spec.Patches, p)
	}
	if err := flatten(errs); err != nil {
		return nil, err
	}
	return spec, nil
}

// checkFetchedBase checks a base that names a suite: a package to fetch
// and, optionally, the tarball's relative path inside it.
func checkFetchedBase(path, pkg, suite, member string) error {
	switch {
	case pkg == "":
		return &SpecError{Path: path, Msg: "base.suite needs base.package: the Debian package to fetch"}
	case !debNameRe.MatchString(pkg):
		return &SpecError{Path: path, Msg: fmt.Sprintf("base.package %q is not a Debian package name", pkg)}
	case !debNameRe.MatchString(suite):
		return &SpecError{Path: path, Msg: fmt.Sprintf("base.suite %q is not a Debian suite name such as trixie-backports", suite)}
	case member != "" && (filepath.IsAbs(member) || !filepath.IsLocal(member)):
		return &SpecError{Path: path, Msg: fmt.Sprintf("base.tarball %q: with base.suite it is a path inside the package, such as usr/src/%s.tar.xz", member, pkg)}
	}
	return nil
}

// treeBase checks a tree or git base: one of the two, a folder that
// exists, rev only with git, no tarball fields beside them.
func treeBase(path string, line int, dir, tree, git, rev string, tarball bool) (Base, error) {
	var msg string
	switch {
	case tree != "" && git != "":
		msg = "base.tree and base.git exclude each other: tree builds the folder as it is, git a revision of it"
	case tree == "" && git == "":
		msg = "base.rev needs base.git: the repository to build the revision of"
	case tree != "" && rev != "":
		msg = "base.rev needs base.git, not base.tree: a tree is built as it is on disk"
	case tarball:
		msg = "base.tree and base.git exclude base.tarball, base.package and base.suite"
	case strings.HasPrefix(rev, "-"):
		msg = fmt.Sprintf("base.rev %q: a revision does not start with -", rev)
	}
	if msg != "" {
		return Base{}, &SpecError{Path: path, Line: line, Msg: msg}
	}
	b := Base{Tree: tree, Git: git, Rev: rev}
	p, err := filepath.Abs(resolvePath(dir, b.Dir()))
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(p); err == nil && !fi.IsDir() {
			err = fmt.Errorf("not a folder")
		}
	}
	if err != nil {
		return b, &SpecError{Path: path, Line: line, Msg: fmt.Sprintf("base %q: %v", b.Dir(), err), Err: err}
	}
	if git != "" {
		b.Git = p
		if b.Rev == "" {
			b.Rev = "HEAD"
		}
	} else {
		b.Tree = p
	}
	return b, nil
}

// existingFile resolves a path named in a spec and checks that the file exists.
func existingFile(specPath, dir, kind string, ref located) (string, error) {
	p := resolvePath(dir, ref.Value)
	fi, err := os.Stat(p)
	if err != nil {
		return p, &SpecError{Path: specPath, Line: ref.Line,
			Msg: fmt.Sprintf("%s %q not found (looked for %s)", kind, ref.Value, p), Err: err}
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() { // a device or FIFO would block or never end
		return p, &SpecError{Path: specPath, Line: ref.Line,
			Msg: fmt.Sprintf("%s %q is not a file or folder (%s)", kind, ref.Value, fi.Mode().Type())}
	}
	return p, nil
}

// resolvePath joins a spec-relative path onto the spec's dir; absolute paths stay as they are.
func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// flatten returns nil, the only error, or the multierror itself.
func flatten(errs *multierror.Error) error {
	if errs == nil || len(errs.Errors) == 0 {
		return nil
	}
	if len(errs.Errors) == 1 {
		return errs.Errors[0]
	}
	return errs
}

// AtCommit returns spec building its tree or git base at commit (a
// recorded run's, a bisect step's); other specs are returned as they are.
func (s *Spec) AtCommit(commit string) *Spec {
	if !s.Base.IsTree() {
		return s
	}
	out := *s
	out.Base = Base{Git: s.Base.Dir(), Rev: commit}
	return &out
}
