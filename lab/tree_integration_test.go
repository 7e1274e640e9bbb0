package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"napilab/kernels"
	"napilab/patches"
	"napilab/results"
)

// treeTestEnv gates TestTreeEndToEnd: it builds kernels and boots guests
// for an hour or more.
const treeTestEnv = "NAPILAB_TREE_TEST"

// treeTestTarball is the Debian source the test's repository is made of.
const treeTestTarball = "/usr/src/linux-source-6.1.tar.xz"

// TestTreeEndToEnd is the test, with real builds and guests: a git
// repository made of the Debian 6.1 source (an import commit), then the
// shipped threaded-napi-rps-6.1 series, comment-only commits and the
// positive control of napi-disable-threaded-nic
// (patches/regress-napi-disable-hang) as commits. It checks that a tree
// build leaves the repository alone and is a cache hit when unchanged, that
// a one-line edit rebuilds incrementally, that lab run --tree on the commit
// before the control passes and records the commit, and that lab bisect
// names the control's commit. It logs the times the closing note
// asks for.
//
//	NAPILAB_TREE_TEST=1 go test ./lab -run TestTreeEndToEnd -v -timeout 4h
func TestTreeEndToEnd(t *testing.T) {
	if testing.Short() || os.Getenv(treeTestEnv) != "1" {
		t.Skipf("builds kernels and boots guests for an hour or more: set %s=1 and leave out -short", treeTestEnv)
	}
	if _, err := os.Stat(treeTestTarball); err != nil {
		t.Skipf("needs %s (apt-get install linux-source-6.1)", treeTestTarball)
	}
	t.Chdir("..")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Hour)
	defer cancel()
	repo, control := makeTreeRepo(t, ctx)
	const name = "napilab-tree-it"
	cache := kernels.DefaultCacheDir()
	tmpl, err := kernels.LoadSpec("kernels/stock-6.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// An earlier run built the same trees: the first build must be one.
	old, _ := filepath.Glob(filepath.Join(cache, "kernels", name+"-*"))
	for _, dir := range old {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	path, err := kernels.WriteTreeSpec(cache, name, repo, "", tmpl)
	if err != nil {
		t.Fatal(err)
	}
	build := func(what string, wantCached bool) *kernels.Artifact {
		t.Helper()
		spec, err := kernels.LoadSpec(path)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		a, err := kernels.Build(ctx, spec, kernels.Options{})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("TIME %s: %.1fs, cached %v, %d objects compiled", what, time.Since(start).Seconds(), a.Cached, a.Info.Objects)
		if a.Cached != wantCached {
			t.Errorf("%s: cached %v, want %v", what, a.Cached, wantCached)
		}
		return a
	}
	// git status refreshes the index: run it before the snapshot.
	status := gitIn(t, repo, "status", "--porcelain")
	before := treeSnapshot(t, repo)
	first := build("first build of the tree", false)
	build("unchanged tree", true)
	if after := treeSnapshot(t, repo); !equalSnapshots(t, before, after) {
		t.Error("building the tree wrote to it")
	}
	if got := gitIn(t, repo, "status", "--porcelain"); got != status {
		t.Errorf("git status after the builds = %q, was %q", got, status)
	}
	dev := filepath.Join(repo, "net/core/dev.c")
	orig, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dev, append(orig, []byte("/* napilab: a one-line edit */\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	edited := build("one-line edit", false)
	if edited.Key == first.Key || edited.Info.Source == nil || edited.Info.Source.Dirty == "" {
		t.Errorf("one-line edit: key %s (was %s), source %+v: want a new key and a dirty tree", edited.Key, first.Key, edited.Info.Source)
	}
	if err := os.WriteFile(dev, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	build("edit undone", true)

	out := t.TempDir()
	before1 := gitIn(t, repo, "rev-parse", control+"~1")
	start := time.Now()
	stdout, code := labCmd(t, ctx, "run", "scenarios/napi-disable-threaded-nic.yaml", "--tree", repo, "--rev", before1, "--name", name, "-o", out)
	t.Logf("TIME lab run --tree on the commit before the control: %.0fs, exit %d\n%s", time.Since(start).Seconds(), code, stdout)
	if code != exitPass {
		t.Errorf("lab run --tree --rev %s exited %d, want PASS", before1, code)
	}
	replays, _ := filepath.Glob(filepath.Join(out, "*", "replay.json"))
	for _, p := range replays {
		data, _ := os.ReadFile(p)
		var rp results.Replay
		if json.Unmarshal(data, &rp) != nil || rp.Commit != before1 || rp.Dirty != "" {
			t.Errorf("%s records commit %q dirty %q, want %s", p, rp.Commit, rp.Dirty, before1)
		}
	}
	if len(replays) == 0 {
		t.Errorf("no replay.json under %s", out)
	}

	start = time.Now()
	stdout, code = labCmd(t, ctx, "bisect", "scenarios/napi-disable-threaded-nic.yaml", "--tree", repo,
		"--good", "import", "--bad", "HEAD", "--runs", "3", "--name", name, "-o", out)
	t.Logf("TIME lab bisect over %s commits: %.0fs, exit %d\n%s", gitIn(t, repo, "rev-list", "--count", "import..HEAD"), time.Since(start).Seconds(), code, stdout)
	if want := "first bad commit: " + control + " "; code != exitPass || !strings.Contains(stdout, want) {
		t.Errorf("lab bisect exited %d, want PASS and %q", code, want)
	}
}

// makeTreeRepo makes the test's repository and returns it and the
// control's commit id.
func makeTreeRepo(t *testing.T, ctx context.Context) (repo, control string) {
	t.Helper()
	start := time.Now()
	tmp := t.TempDir()
	if out, err := exec.CommandContext(ctx, "tar", "-xf", treeTestTarball, "-C", tmp).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one folder in the tarball: %v %v", entries, err)
	}
	repo = filepath.Join(tmp, entries[0].Name())
	gitIn(t, repo, "init", "-q", "-b", "main")
	// No automatic gc: after the 70,000-object import, a later commit would
	// start one in the background, and its packing moves the repository's
	// objects while the test checks that nothing in the tree changes.
	gitIn(t, repo, "config", "gc.auto", "0")
	// -f: Debian's tarball ships a .gitignore that ignores /* (its packaging's).
	gitIn(t, repo, "add", "-A", "-f")
	gitIn(t, repo, "commit", "-q", "-m", "import linux-source-6.1")
	gitIn(t, repo, "tag", "import")
	commit := func(p patches.Patch) string {
		cmd := exec.CommandContext(ctx, "git", "-C", repo, "apply", "--index", "-")
		cmd.Stdin = bytes.NewReader(p.Diff)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply %s: %v\n%s", p.Subject, err, out)
		}
		gitIn(t, repo, "commit", "-q", "-m", p.Subject)
		return gitIn(t, repo, "rev-parse", "HEAD")
	}
	load := func(path string) []patches.Patch {
		s, err := patches.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return s.Patches
	}
	// comment commits a comment line at the end of a file: one object to rebuild.
	comment := func(i int, file string) {
		p := filepath.Join(repo, file)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(data, fmt.Sprintf("/* napilab tree test: comment %d */\n", i)...), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, repo, "commit", "-q", "-am", fmt.Sprintf("%s: comment %d", file, i))
	}
	for _, p := range load("patches/threaded-napi-rps-6.1") {
		commit(p)
	}
	files := []string{"drivers/net/veth.c", "net/core/gro.c", "drivers/net/virtio_net.c", "net/core/net-procfs.c",
		"drivers/net/veth.c", "net/core/gro.c", "drivers/net/virtio_net.c"}
	for i, f := range files[:2] {
		comment(i+1, f)
	}
	control = commit(load("patches/regress-napi-disable-hang")[0])
	for i, f := range files[2:] {
		comment(i+3, f)
	}
	t.Logf("TIME repository of %s commits made in %.0fs; control %s", gitIn(t, repo, "rev-list", "--count", "import..HEAD"), time.Since(start).Seconds(), control)
	return repo, control
}

// labCmd runs lab with args and returns its stdout and exit code.
func labCmd(t *testing.T, ctx context.Context, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ec *exitCodeError
	switch {
	case err == nil:
		return out.String(), exitPass
	case errors.As(err, &ec):
		if ec.err != nil {
			t.Logf("lab %s: %v", args[0], ec.err)
		}
		return out.String(), ec.code
	}
	t.Logf("lab %s: %v", args[0], err)
	return out.String(), exitError
}

// treeSnapshot records size, mode, mtime and inode of every path under dir.
func treeSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%d %v %d", fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// equalSnapshots reports (and logs the first few of) the differences.
func equalSnapshots(t *testing.T, a, b map[string]string) bool {
	t.Helper()
	diffs := 0
	for p, was := range a {
		if now := b[p]; now != was {
			if diffs++; diffs <= 5 {
				t.Logf("%s: %q, was %q", p, now, was)
			}
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			if diffs++; diffs <= 5 {
				t.Logf("%s: created", p)
			}
		}
	}
	return diffs == 0
}

// gitIn runs git in dir with a fixed identity, failing the test on error.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A",
		"GIT_COMMITTER_EMAIL=a@x", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
