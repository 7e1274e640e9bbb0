package kernels

// A spec's base may be a local tree (base.tree) or a git repository at a
// revision (base.git, base.rev). The user's folder is only ever read: every
// git command here runs with a private index and, when it has to store an
// object, a private object store under <cache>/trees, the user's objects
// reachable as an alternate; GIT_OPTIONAL_LOCKS=0 keeps git status from
// refreshing the user's index. The build runs on an export of the tree in
// the cache (tree_export.go).
//
// The source's identity is a git tree id, the exact content built:
//
//	git: ../linux, rev R     the tree of commit R
//	tree: on a git checkout  HEAD's tree with every file git status lists
//	                         (modified, deleted, untracked and not ignored)
//	                         as it is on disk; Dirty is that tree's id when
//	                         it differs from HEAD's
//	tree: on a plain folder  every file but .git (its .gitignore files do not
//	                         count), hashed by git add into a private
//	                         repository whose index caches size, mtime and
//	                         inode: only files whose stat changed are read again
//
// An unchanged tree (or a touched file) gives the same id, a one-line edit
// or a commit that changes a file another one.
//
//	trees/<dir16>/git/           private objects (a bare repository for a plain tree)
//	trees/<dir16>/state.index    HEAD plus the working changes (git checkout)
//	trees/<dir16>/scan.index     the stat cache of a plain tree
//	trees/<dir16>/lock           flock held while scanning

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"napilab/internal/procgroup"
)

// TreeState is the source a tree or git base resolved to.
type TreeState struct {
	// Dir is the user's tree or repository.
	Dir string `json:"dir"`
	// Commit is the commit built on (HEAD for a tree), "" for a plain tree.
	Commit string `json:"commit,omitempty"`
	// Dirty is the git tree id of the working tree when it differs from
	// Commit's tree (uncommitted or untracked files), else "".
	Dirty string `json:"dirty,omitempty"`
	// Tree is the git tree id of the exact source built.
	Tree string `json:"tree"`
	// Release is VERSION.PATCHLEVEL.SUBLEVEL plus EXTRAVERSION of its Makefile.
	Release string `json:"release,omitempty"`
}

// gitRepo runs git for one base: on the user's repository (gitDir set) or
// on the lab's private one for a plain tree.
type gitRepo struct {
	// gitDir is the user's git dir ("" for a plain tree).
	gitDir string
	// objects is the user's object store, an alternate of the private one.
	objects string
	// state is trees/<dir16>.
	state string
}

// gitConfig keeps the user's settings from changing what is exported or
// starting helpers on the cache's folders.
var gitConfig = []string{"-c", "core.sparseCheckout=false", "-c", "core.autocrlf=false", "-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "core.safecrlf=false"}

// gitCmd describes one git invocation.
type gitCmd struct {
	args []string
	// index is the private index file; "" uses the user's index read-only
	// (git status).
	index string
	// work is the work tree, if any.
	work  string
	stdin []byte
}

// run runs git and returns its stdout; errors carry stderr.
func (r *gitRepo) run(ctx context.Context, c gitCmd) ([]byte, error) {
	argv := append(append([]string{"git"}, gitConfig...), c.args...)
	env := append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	env = slicesDeleteEnv(env, "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR")
	private := filepath.Join(r.state, "git")
	if r.gitDir == "" {
		env = append(env, "GIT_DIR="+private)
	} else {
		env = append(env, "GIT_DIR="+r.gitDir)
		if c.index != "" { // anything that may store an object stores it privately
			env = append(env, "GIT_OBJECT_DIRECTORY="+filepath.Join(private, "objects"), "GIT_ALTERNATE_OBJECT_DIRECTORIES="+r.objects)
		}
	}
	if c.index != "" {
		env = append(env, "GIT_INDEX_FILE="+c.index)
	}
	if c.work != "" {
		env = append(env, "GIT_WORK_TREE="+c.work)
	}
	return runGit(ctx, argv, env, c.work, c.stdin)
}

// slicesDeleteEnv drops the named variables from env.
func slicesDeleteEnv(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			if name == n {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// openRepo prepares the private state for the base's folder: the user's
// repository when the folder is its top (or base.git names it), else a
// private repository for a plain folder.
func openRepo(ctx context.Context, l layout, b Base) (*gitRepo, error) {
	if err := checkTools("git"); err != nil {
		return nil, err
	}
	dir := b.Dir()
	r := &gitRepo{state: filepath.Join(l.root, "trees", sumString(dir)[:16])}
	env := slicesDeleteEnv(os.Environ(), "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")
	paths, err := runGit(ctx, []string{"git", "-C", dir, "rev-parse", "--path-format=absolute", "--git-dir", "--git-path", "objects"}, env, "", nil)
	if err != nil && b.Git != "" {
		return nil, fmt.Errorf("base.git %s is not a git repository: %w", dir, err)
	}
	if err == nil {
		top, terr := runGit(ctx, []string{"git", "-C", dir, "rev-parse", "--show-toplevel"}, env, "", nil)
		real, _ := filepath.EvalSymlinks(dir)
		if lines := strings.Fields(string(paths)); len(lines) == 2 && (b.Git != "" || terr == nil && strings.TrimSpace(string(top)) == real) {
			r.gitDir, r.objects = lines[0], lines[1]
		}
	}
	private := filepath.Join(r.state, "git")
	if _, err := os.Stat(filepath.Join(private, "objects")); err != nil {
		if err := os.MkdirAll(r.state, 0o755); err != nil {
			return nil, fmt.Errorf("failed to create %s: %w", r.state, err)
		}
		if _, err := runGit(ctx, []string{"git", "init", "-q", "--bare", private}, env, "", nil); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// runGit runs one git command (killed with its process group when ctx
// ends) and returns its stdout; a failure quotes its stderr.
func runGit(ctx context.Context, argv, env []string, dir string, stdin []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	procgroup.Set(cmd, procgroup.KillOnCancel(waitDelay))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := procgroup.Run(cmd); err != nil {
		return nil, fmt.Errorf("failed to run %s: %w\n%s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// resolveTree returns the source state of a tree or git base.
func resolveTree(ctx context.Context, l layout, b Base) (*TreeState, error) {
	r, err := openRepo(ctx, l, b)
	if err != nil {
		return nil, err
	}
	unlock, err := LockFile(ctx, filepath.Join(r.state, "lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	st := &TreeState{Dir: b.Dir()}
	switch {
	case b.Git != "":
		if st.Commit, err = r.revParse(ctx, b.Rev, "^{commit}"); err == nil {
			st.Tree, err = r.revParse(ctx, st.Commit, "^{tree}")
		}
	case r.gitDir != "":
		err = r.workingState(ctx, b.Tree, st)
	default:
		st.Tree, err = r.scanPlain(ctx, b.Tree)
	}
	if err != nil {
		return nil, err
	}
	mk, err := r.run(ctx, gitCmd{args: []string{"cat-file", "blob", st.Tree + ":Makefile"}, index: filepath.Join(r.state, "state.index")})
	if err != nil {
		return nil, fmt.Errorf("%s is not a kernel tree: %w", st.Dir, err)
	}
	st.Release = makefileRelease(mk)
	return st, nil
}

// revParse resolves rev to an object id in the user's repository.
func (r *gitRepo) revParse(ctx context.Context, rev, peel string) (string, error) {
	out, err := r.run(ctx, gitCmd{args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", rev + peel}})
	if err != nil {
		return "", fmt.Errorf("unknown revision %q in %s", rev, r.gitDir)
	}
	return strings.TrimSpace(string(out)), nil
}

// scanPlain hashes a plain folder into the private repository (its index
// is the stat cache) and returns its tree id. Every file but .git counts:
// a folder's .gitignore is not the lab's business (Debian's source
// tarballs ignore "/*"); build outputs of a build inside it make Kbuild
// ask for make mrproper.
func (r *gitRepo) scanPlain(ctx context.Context, dir string) (string, error) {
	index := filepath.Join(r.state, "scan.index")
	if _, err := r.run(ctx, gitCmd{args: []string{"add", "-A", "--force", "--ignore-errors", "."}, index: index, work: dir}); err != nil {
		return "", err
	}
	out, err := r.run(ctx, gitCmd{args: []string{"write-tree"}, index: index})
	return strings.TrimSpace(string(out)), err
}

// workingState fills in the commit, the tree and the dirty id of a git
// checkout as it is on disk.
func (r *gitRepo) workingState(ctx context.Context, dir string, st *TreeState) error {
	var err error
	if st.Commit, err = r.revParse(ctx, "HEAD", "^{commit}"); err != nil {
		return fmt.Errorf("%s has no commit yet: %w", dir, err)
	}
	head, err := r.revParse(ctx, st.Commit, "^{tree}")
	if err != nil {
		return err
	}
	// The user's index, read only: status never writes it with optional locks off.
	out, err := r.run(ctx, gitCmd{args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"}, work: dir})
	if err != nil {
		return err
	}
	changed := statusPaths(out)
	if len(changed) == 0 {
		st.Tree = head
		return nil
	}
	index := filepath.Join(r.state, "state.index")
	if _, err := r.run(ctx, gitCmd{args: []string{"read-tree", head}, index: index}); err != nil {
		return err
	}
	info, err := r.indexInfo(ctx, dir, index, strings.Repeat("0", len(head)), changed)
	if err != nil {
		return err
	}
	if _, err := r.run(ctx, gitCmd{args: []string{"update-index", "-z", "--index-info"}, index: index, stdin: info}); err != nil {
		return err
	}
	out, err = r.run(ctx, gitCmd{args: []string{"write-tree"}, index: index})
	if err != nil {
		return err
	}
	st.Tree = strings.TrimSpace(string(out))
	if st.Tree != head {
		st.Dirty = st.Tree
	}
	return nil
}

// statusPaths returns the paths of `git status --porcelain=v1 -z` output.
func statusPaths(out []byte) []string {
	var paths []string
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) > 3 {
			paths = append(paths, string(rec[3:]))
		}
	}
	return paths
}

// indexInfo returns `update-index --index-info` input for the changed
// paths as they are on disk: deleted ones removed, the others hashed,
// their blobs stored in the private store when the repository lacks them
// (a blob it has is never written again, so git does not touch the
// user's object files).
func (r *gitRepo) indexInfo(ctx context.Context, dir, index, zero string, paths []string) ([]byte, error) {
	var info bytes.Buffer
	var files, modes []string
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(dir, p))
		switch {
		case err != nil:
			fmt.Fprintf(&info, "0 %s\t%s\x00", zero, p)
		case fi.Mode().IsRegular():
			files = append(files, p)
			modes = append(modes, map[bool]string{true: "100755", false: "100644"}[fi.Mode()&0o111 != 0])
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(filepath.Join(dir, p))
			if err != nil {
				return nil, fmt.Errorf("failed to read link %s: %w", p, err)
			}
			id, err := r.storeBlob(ctx, dir, index, []string{"hash-object", "--stdin"}, []byte(target))
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&info, "120000 %s\t%s\x00", id[0], p)
		} // a folder is a nested repository: left out, as git add would
	}
	if len(files) > 0 {
		ids, err := r.storeBlob(ctx, dir, index, []string{"hash-object", "--no-filters", "--stdin-paths"}, []byte(strings.Join(files, "\n")+"\n"))
		if err != nil {
			return nil, err
		}
		for i, p := range files {
			fmt.Fprintf(&info, "%s %s\t%s\x00", modes[i], ids[i], p)
		}
	}
	return info.Bytes(), nil
}

// storeBlob hashes with args (run in the tree dir; inputs are stdin's
// lines, or stdin itself for --stdin), then writes only the blobs the
// repository lacks, and returns the ids. A blob the repository has is never
// written again, so git does not touch the user's object files.
func (r *gitRepo) storeBlob(ctx context.Context, dir, index string, args []string, stdin []byte) ([]string, error) {
	out, err := r.run(ctx, gitCmd{args: args, index: index, work: dir, stdin: stdin})
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(out))
	check, err := r.run(ctx, gitCmd{args: []string{"cat-file", "--batch-check"}, index: index, stdin: []byte(strings.Join(ids, "\n") + "\n")})
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(check)), "\n")
	inputs := strings.Split(strings.TrimSuffix(string(stdin), "\n"), "\n")
	var missing []string
	for i, line := range lines {
		if strings.HasSuffix(line, " missing") && i < len(inputs) {
			missing = append(missing, inputs[i])
		}
	}
	if len(missing) == 0 {
		return ids, nil
	}
	write := stdin
	if args[len(args)-1] == "--stdin-paths" {
		write = []byte(strings.Join(missing, "\n") + "\n")
	}
	if _, err := r.run(ctx, gitCmd{args: append([]string{"hash-object", "-w"}, args[1:]...), index: index, work: dir, stdin: write}); err != nil {
		return nil, err
	}
	return ids, nil
}

// makefileVarRe matches the version lines of the top Makefile.
var makefileVarRe = regexp.MustCompile(`^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION)\s*=\s*(\S*)\s*$`)

// makefileRelease reads the release from a kernel Makefile:
// "6.12.0-rc3", or "" when it names no VERSION.
func makefileRelease(mk []byte) string {
	v := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(mk))
	for n := 0; sc.Scan() && n < 20; n++ { // the version lines come first
		if m := makefileVarRe.FindStringSubmatch(sc.Text()); m != nil {
			v[m[1]] = m[2]
		}
	}
	if v["VERSION"] == "" {
		return ""
	}
	rel := v["VERSION"] + "." + v["PATCHLEVEL"]
	if v["SUBLEVEL"] != "" {
		rel += "." + v["SUBLEVEL"]
	}
	return rel + v["EXTRAVERSION"]
}

// TreeRelease returns the kernel release a tree or git base's Makefile
// names, without exporting or building it.
func TreeRelease(ctx context.Context, cacheDir string, b Base) (string, error) {
	st, err := resolveTree(ctx, layout{cacheDir}, b)
	if err != nil {
		return "", err
	}
	return st.Release, nil
}

// Commit is one commit of a bisect range.
type Commit struct {
	// ID is the full commit id.
	ID string
	// Subject is the first line of its message.
	Subject string
}

// RevList returns good's commit, then the commits of good..bad along bad's
// first parents, oldest first (git rev-list --first-parent --reverse): a
// merge stands for the whole branch it brings in. good must be an ancestor
// of bad. It only reads the repository.
func RevList(ctx context.Context, dir, good, bad string) ([]Commit, error) {
	env := append(slicesDeleteEnv(os.Environ(), "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"), "GIT_OPTIONAL_LOCKS=0")
	git := func(args ...string) ([]byte, error) {
		return runGit(ctx, append(append([]string{"git", "-C", dir}, gitConfig...), args...), env, "", nil)
	}
	var ids []string
	for _, rev := range []string{good, bad} {
		if strings.HasPrefix(rev, "-") {
			return nil, fmt.Errorf("bad revision %q", rev)
		}
		out, err := git("rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
		if err != nil {
			return nil, fmt.Errorf("unknown revision %q in %s", rev, dir)
		}
		ids = append(ids, strings.TrimSpace(string(out)))
	}
	if _, err := git("merge-base", "--is-ancestor", ids[0], ids[1]); err != nil {
		return nil, fmt.Errorf("%s (%s) is not an ancestor of %s (%s): nothing to bisect", good, ids[0][:12], bad, ids[1][:12])
	}
	out, err := git("log", "--first-parent", "--reverse", "--format=%H%x00%s", ids[0]+".."+ids[1])
	if err != nil {
		return nil, err
	}
	subj, err := git("log", "-1", "--format=%s", ids[0])
	if err != nil {
		return nil, err
	}
	commits := []Commit{{ID: ids[0], Subject: strings.TrimSpace(string(subj))}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if id, s, ok := strings.Cut(line, "\x00"); ok {
			commits = append(commits, Commit{ID: id, Subject: s})
		}
	}
	return commits, nil
}
