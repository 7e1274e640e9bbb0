package kernels

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gitT runs git in dir with a fixed identity and dates, failing the test on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A",
		"GIT_COMMITTER_EMAIL=a@x", "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// kernelTree is a small synthetic kernel tree.
var kernelTree = map[string]string{
	"Makefile":          "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 158\nEXTRAVERSION =\nNAME = Curry Ramen\n",
	"net/core/dev.c":    "int napi;\nint busy;\n",
	"net/core/gro.c":    "int gro;\n",
	"include/x.h":       "#define X 1\n",
	".gitignore":        "*.o\n/.config\n",
	"scripts/setver.sh": "#!/bin/sh\n",
}

// newRepo makes a git repository holding kernelTree in one commit.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "linux")
	writeFiles(t, dir, kernelTree)
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "import")
	return dir
}

// TestTreeKey: the source identity of a git checkout changes with its
// content (an edit, an untracked file, a deletion, a commit that changes a
// file), not with a touch or an ignored file, and comes back when the
// content does.
func TestTreeKey(t *testing.T) {
	dir := newRepo(t)
	l := layout{t.TempDir()}
	state := func() *TreeState {
		t.Helper()
		st, err := resolveTree(context.Background(), l, Base{Tree: dir})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	first := state()
	if first.Dirty != "" || first.Commit == "" || first.Release != "6.1.158" {
		t.Fatalf("clean checkout: %+v, want a commit, no dirty id, release 6.1.158", first)
	}
	seen := map[string]string{first.Tree: "clean"}
	for _, tc := range []struct {
		name   string
		change func()
		// same names the earlier state whose tree this one must equal; "" means a new tree.
		same  string
		dirty bool
	}{
		{"unchanged", func() {}, "clean", false},
		{"touch", func() {
			future := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(dir, "net/core/dev.c"), future, future)
		}, "clean", false},
		{"ignored file", func() { writeFiles(t, dir, map[string]string{"net/core/dev.o": "obj", ".config": "CONFIG_X=y\n"}) }, "clean", false},
		{"one-line edit", func() { writeFiles(t, dir, map[string]string{"net/core/dev.c": "int napi;\nint busy = 1;\n"}) }, "", true},
		{"untracked file", func() { writeFiles(t, dir, map[string]string{"net/core/new.c": "int n;\n"}) }, "", true},
		{"deleted file", func() { os.Remove(filepath.Join(dir, "net/core/gro.c")) }, "", true},
		{"edits undone", func() {
			writeFiles(t, dir, map[string]string{"net/core/dev.c": kernelTree["net/core/dev.c"], "net/core/gro.c": kernelTree["net/core/gro.c"]})
			os.Remove(filepath.Join(dir, "net/core/new.c"))
		}, "clean", false},
		{"staged edit", func() {
			writeFiles(t, dir, map[string]string{"include/x.h": "#define X 2\n"})
			gitT(t, dir, "add", "include/x.h")
		}, "", true},
		{"committed", func() { gitT(t, dir, "commit", "-q", "-m", "x 2") }, "staged edit", false},
		{"exec bit", func() { os.Chmod(filepath.Join(dir, "scripts/setver.sh"), 0o755) }, "", true},
	} {
		head := gitT(t, dir, "rev-parse", "HEAD")
		tc.change()
		st := state()
		name, ok := seen[st.Tree]
		switch {
		case tc.same == "" && ok:
			t.Errorf("%s: tree %s is the one of %q, want a new one", tc.name, st.Tree, name)
		case tc.same != "" && name != tc.same:
			t.Errorf("%s: tree %s is %q's, want %q's", tc.name, st.Tree, name, tc.same)
		}
		if (st.Dirty != "") != tc.dirty || tc.dirty && st.Dirty != st.Tree {
			t.Errorf("%s: dirty %q (tree %s), want dirty %v", tc.name, st.Dirty, st.Tree, tc.dirty)
		}
		if want := gitT(t, dir, "rev-parse", "HEAD"); st.Commit != want {
			t.Errorf("%s: commit %s, want HEAD %s", tc.name, st.Commit, want)
		}
		_ = head
		if !ok {
			seen[st.Tree] = tc.name
		}
	}
}

// TestPlainTreeKey: a folder that is not a git checkout is hashed with a
// stat cache: a touch keeps its identity, an edit changes it. Its
// .gitignore does not count (Debian's ignores "/*").
func TestPlainTreeKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "src")
	writeFiles(t, dir, kernelTree)
	writeFiles(t, dir, map[string]string{".gitignore": "/*\n!/debian/\n"})
	l := layout{t.TempDir()}
	tree := func() string {
		t.Helper()
		st, err := resolveTree(context.Background(), l, Base{Tree: dir})
		if err != nil {
			t.Fatal(err)
		}
		if st.Commit != "" || st.Dirty != "" || st.Release != "6.1.158" {
			t.Errorf("plain tree: %+v, want no commit, release 6.1.158", st)
		}
		return st.Tree
	}
	a := tree()
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, "net/core/dev.c"), future, future)
	if b := tree(); b != a {
		t.Errorf("touch changed the tree: %s, was %s", b, a)
	}
	writeFiles(t, dir, map[string]string{"net/core/dev.c": "int napi;\nint busy = 2;\n"})
	if b := tree(); b == a {
		t.Errorf("an edit kept the tree %s", a)
	}
}

// TestGitBaseRev: base.git builds a revision, whatever the work tree holds.
func TestGitBaseRev(t *testing.T) {
	dir := newRepo(t)
	first := gitT(t, dir, "rev-parse", "HEAD")
	writeFiles(t, dir, map[string]string{"Makefile": strings.Replace(kernelTree["Makefile"], "SUBLEVEL = 158", "SUBLEVEL = 159", 1)})
	gitT(t, dir, "commit", "-q", "-am", "6.1.159")
	gitT(t, dir, "tag", "v6.1.159")
	writeFiles(t, dir, map[string]string{"net/core/dev.c": "dirty\n"})
	l := layout{t.TempDir()}
	for _, tc := range []struct{ rev, commit, release string }{
		{first, first, "6.1.158"},
		{"v6.1.159", gitT(t, dir, "rev-parse", "v6.1.159"), "6.1.159"},
		{"main~1", first, "6.1.158"},
	} {
		st, err := resolveTree(context.Background(), l, Base{Git: dir, Rev: tc.rev})
		if err != nil {
			t.Fatal(err)
		}
		if st.Commit != tc.commit || st.Dirty != "" || st.Release != tc.release {
			t.Errorf("rev %s: %+v, want commit %s, release %s, not dirty", tc.rev, st, tc.commit, tc.release)
		}
	}
	if _, err := resolveTree(context.Background(), l, Base{Git: dir, Rev: "nope"}); err == nil || !strings.Contains(err.Error(), `unknown revision "nope"`) {
		t.Errorf("unknown rev: %v", err)
	}
}

// snapshot records every path under dir (.git included) with its size,
// mode, mtime and inode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		out[p] = fmt.Sprintf("%d %v %d %d", fi.Size(), fi.Mode(), fi.ModTime().UnixNano(), st.Ino)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// treeBuilder is a builder for spec with its tree resolved, without the compiler.
func treeBuilder(t *testing.T, l layout, spec *Spec) *builder {
	t.Helper()
	st, err := resolveTree(context.Background(), l, spec.Base)
	if err != nil {
		t.Fatal(err)
	}
	in := &inputs{spec: spec, tree: st, tarSum: sumString("git-tree " + st.Tree)}
	if in.series, err = loadSeries(spec); err != nil {
		t.Fatal(err)
	}
	return &builder{spec: spec, in: in, layout: l}
}

// TestExportLeavesTreeAlone: resolving and exporting a dirty checkout,
// then a revision of it, writes nothing in the user's tree: every path
// (.git included) keeps its size, mode, mtime and inode, and git status is
// the same.
func TestExportLeavesTreeAlone(t *testing.T) {
	dir := newRepo(t)
	writeFiles(t, dir, map[string]string{"net/core/dev.c": "edited\n", "untracked.c": "u\n", "x.o": "ignored"})
	gitT(t, dir, "add", "include") // nothing to add: the index stays as it is
	status := gitT(t, dir, "status", "--porcelain")
	before := snapshot(t, dir)
	l := layout{t.TempDir()}
	for i, base := range []Base{{Tree: dir}, {Git: dir, Rev: "HEAD"}} {
		spec := &Spec{Name: fmt.Sprintf("t%d", i), Base: base}
		if _, _, err := treeBuilder(t, l, spec).export(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	after := snapshot(t, dir)
	for p, was := range before {
		if now := after[p]; now != was {
			t.Errorf("%s changed: %q, was %q", p, now, was)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created in the user's tree", p)
		}
	}
	if got := gitT(t, dir, "status", "--porcelain"); got != status {
		t.Errorf("git status = %q, was %q", got, status)
	}
	for name, want := range map[string]string{"t0": "edited\n", "t1": kernelTree["net/core/dev.c"]} {
		got, err := os.ReadFile(filepath.Join(l.exportDir(name), "net/core/dev.c"))
		if err != nil || string(got) != want {
			t.Errorf("export %s: dev.c = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(l.exportDir("t0"), "untracked.c")); err != nil {
		t.Errorf("the tree's untracked file is not exported: %v", err)
	}
	for _, p := range []string{"x.o", ".git"} {
		if _, err := os.Stat(filepath.Join(l.exportDir("t0"), p)); err == nil {
			t.Errorf("%s is exported", p)
		}
	}
}

// TestExportIncremental: a new state rewrites only the files that changed
// (with the current time, newer than their objects), deletes removed ones
// and leaves the others as they were (mtime and inode); an unchanged state
// is not exported again.
func TestExportIncremental(t *testing.T) {
	dir := newRepo(t)
	l := layout{t.TempDir()}
	spec := &Spec{Name: "tree-linux", Base: Base{Tree: dir}}
	export := func() string {
		t.Helper()
		out, _, err := treeBuilder(t, l, spec).export(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := export()
	before := snapshot(t, out)
	if again := snapshot(t, export()); !reflect.DeepEqual(again, before) {
		t.Errorf("an unchanged tree was exported again")
	}
	writeFiles(t, dir, map[string]string{"net/core/dev.c": "int napi;\nint busy = 1;\n", "net/core/new.c": "n\n"})
	os.Remove(filepath.Join(dir, "include/x.h"))
	mark := filepath.Join(t.TempDir(), "mark") // the file system's clock as the export starts
	writeFiles(t, filepath.Dir(mark), map[string]string{"mark": ""})
	markInfo, err := os.Stat(mark)
	if err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, export())
	for p, was := range before {
		rel, _ := filepath.Rel(out, p)
		now, ok := after[p]
		switch rel {
		case "net/core/dev.c":
			fi, err := os.Stat(p)
			data, _ := os.ReadFile(p)
			if err != nil || string(data) != "int napi;\nint busy = 1;\n" || fi.ModTime().Before(markInfo.ModTime()) {
				t.Errorf("%s was edited: exported %q, mtime %v, want the edit, not older than %v", rel, data, fi.ModTime(), markInfo.ModTime())
			}
		case "include/x.h":
			if ok {
				t.Errorf("%s was deleted but is still exported", rel)
			}
		case ".", "net", "net/core", "include":
		default:
			if now != was {
				t.Errorf("%s did not change but was rewritten: %q, was %q", rel, now, was)
			}
		}
	}
	if _, ok := after[filepath.Join(out, "net/core/new.c")]; !ok {
		t.Errorf("the new file is not exported")
	}
}

// TestExportPatches: a tree spec's patches are applied in the export, and
// the next export (the tree edited) undoes them before applying them again,
// removing the files they created.
func TestExportPatches(t *testing.T) {
	dir := newRepo(t)
	pdir := t.TempDir()
	writeFiles(t, pdir, map[string]string{
		"0001-busy.patch": "--- a/net/core/dev.c\n+++ b/net/core/dev.c\n@@ -1,2 +1,2 @@\n int napi;\n-int busy;\n+int busy = 3;\n",
		"0002-new.patch":  "--- /dev/null\n+++ b/net/core/added.c\n@@ -0,0 +1 @@\n+int added;\n",
		"series":          "0001-busy.patch\n0002-new.patch\n",
	})
	l := layout{t.TempDir()}
	spec := &Spec{Name: "tree-linux-p", Base: Base{Tree: dir}, Patches: []string{pdir}}
	read := func(out, rel string) string {
		data, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(data)
	}
	out, m, err := treeBuilder(t, l, spec).export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := read(out, "net/core/dev.c"); got != "int napi;\nint busy = 3;\n" || m == nil || len(m.Results) != 2 {
		t.Fatalf("patched dev.c = %q, marker %+v", got, m)
	}
	writeFiles(t, dir, map[string]string{"net/core/gro.c": "int gro = 1;\n"})
	out, _, err = treeBuilder(t, l, spec).export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"net/core/dev.c": "int napi;\nint busy = 3;\n", "net/core/added.c": "int added;\n", "net/core/gro.c": "int gro = 1;\n"} {
		if got := read(out, rel); got != want {
			t.Errorf("after an edit, %s = %q, want %q", rel, got, want)
		}
	}
	spec.Patches = nil
	out, _, err = treeBuilder(t, l, spec).export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := read(out, "net/core/dev.c"); got != kernelTree["net/core/dev.c"] {
		t.Errorf("patches dropped: dev.c = %q, want the tree's", got)
	}
	if _, err := os.Stat(filepath.Join(out, "net/core/added.c")); err == nil {
		t.Errorf("patches dropped: the file a patch created is still there")
	}
}

func TestMakefileRelease(t *testing.T) {
	for _, tc := range []struct{ name, mk, want string }{
		{"stable", kernelTree["Makefile"], "6.1.158"},
		{"rc", "VERSION = 6\nPATCHLEVEL = 13\nSUBLEVEL = 0\nEXTRAVERSION = -rc3\n", "6.13.0-rc3"},
		{"no sublevel", "VERSION = 7\nPATCHLEVEL = 3\n", "7.3"},
		{"not a kernel", "all:\n\tcc x.c\n", ""},
	} {
		if got := makefileRelease([]byte(tc.mk)); got != tc.want {
			t.Errorf("%s: release %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRevList: good's commit, then good..bad oldest first; refused when
// good is not an ancestor of bad.
func TestRevList(t *testing.T) {
	dir := newRepo(t)
	var ids []string
	for i := 1; i <= 10; i++ {
		writeFiles(t, dir, map[string]string{"net/core/gro.c": fmt.Sprintf("int gro = %d;\n", i)})
		gitT(t, dir, "commit", "-q", "-am", fmt.Sprintf("gro %d", i))
		ids = append(ids, gitT(t, dir, "rev-parse", "HEAD"))
	}
	got, err := RevList(context.Background(), dir, "HEAD~7", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 || got[0].ID != ids[2] || got[0].Subject != "gro 3" || got[7].ID != ids[9] || got[7].Subject != "gro 10" {
		t.Errorf("RevList(HEAD~7, HEAD) = %+v", got)
	}
	if _, err := RevList(context.Background(), dir, "HEAD", "HEAD~3"); err == nil || !strings.Contains(err.Error(), "not an ancestor") {
		t.Errorf("reversed range: %v, want not an ancestor", err)
	}
}

// TestLoadSpecTreeBases: the two shapes resolve against the spec's dir;
// the mixes are refused with the file and line.
func TestLoadSpecTreeBases(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"linux/Makefile": "VERSION = 6\n", "specs/a.config": "CONFIG_A=y\n", "specs/file": "x"})
	linux := filepath.Join(root, "linux")
	for _, tc := range []struct {
		name, base string
		want       Base
		err        string
	}{
		{"tree", "  tree: ../linux\n", Base{Tree: linux}, ""},
		{"git", "  git: ../linux\n  rev: net-next/main\n", Base{Git: linux, Rev: "net-next/main"}, ""},
		{"git default rev", "  git: ../linux\n", Base{Git: linux, Rev: "HEAD"}, ""},
		{"both", "  tree: ../linux\n  git: ../linux\n", Base{}, ":2: base.tree and base.git exclude each other"},
		{"rev alone", "  rev: v6.1\n", Base{}, ":2: base.rev needs base.git"},
		{"rev on tree", "  tree: ../linux\n  rev: v6.1\n", Base{}, "base.rev needs base.git, not base.tree"},
		{"tarball too", "  tree: ../linux\n  tarball: /x.tar.xz\n", Base{}, "exclude base.tarball"},
		{"missing", "  tree: ../nope\n", Base{}, `:2: base "../nope"`},
		{"a file", "  git: file\n", Base{}, "not a folder"},
		{"option rev", "  git: ../linux\n  rev: --upload-pack=x\n", Base{}, "does not start with -"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(root, "specs", "x.yaml")
			writeFiles(t, root, map[string]string{"specs/x.yaml": "name: x\nbase:\n" + tc.base + "config:\n  fragments: [a.config]\n"})
			spec, err := LoadSpec(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.Base != tc.want {
				t.Errorf("base = %+v, want %+v", spec.Base, tc.want)
			}
		})
	}
}

// TestWriteTreeSpec: an ad-hoc spec loads back with the tree and the
// template's config, fragments absolute.
func TestWriteTreeSpec(t *testing.T) {
	tmpl, err := LoadSpec("stock-6.12.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := newRepo(t)
	cache := t.TempDir()
	for _, rev := range []string{"", "main"} {
		name := TreeSpecName(dir, rev)
		path, err := WriteTreeSpec(cache, name, dir, rev, tmpl)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := LoadSpec(path)
		if err != nil {
			t.Fatal(err)
		}
		want := Base{Tree: dir}
		if rev != "" {
			want = Base{Git: dir, Rev: rev}
		}
		if spec.Base != want || spec.Name != name || len(spec.Config.Fragments) != len(tmpl.Config.Fragments) || !filepath.IsAbs(spec.Config.Fragments[0]) {
			t.Errorf("rev %q: spec %+v", rev, spec)
		}
	}
	if got := TreeSpecName("/src/net-next", "origin/main~3"); got != "tree-net-next-origin-main-3" {
		t.Errorf("TreeSpecName = %q", got)
	}
}
