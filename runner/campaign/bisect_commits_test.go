package campaign

import (
	"bytes"
	"context"
	"fmt"
	"napilab/kernels"
	"napilab/runner"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// historyRepo makes a repository with an import commit and one more per
// subject; from commit bug on net/core/dev.c holds "BUG".
func historyRepo(t *testing.T, subjects []string, bug int) string {
	t.Helper()
	dir := t.TempDir()
	script := []string{"git init -q -b main", "printf 'VERSION = 6\\nPATCHLEVEL = 1\\nSUBLEVEL = 0\\n' > Makefile",
		"mkdir -p net/core", "echo ok > net/core/dev.c", "git add -A", "git commit -q -m 'import 6.1'", "git tag v6.1"}
	for i, s := range subjects {
		script = append(script, fmt.Sprintf("echo %q > net/core/c%d.c", s, i+1))
		if i+1 == bug {
			script = append(script, "echo BUG > net/core/dev.c")
		}
		script = append(script, "git add -A", fmt.Sprintf("git commit -q -m %q", s))
	}
	cmd := exec.Command("sh", "-ec", strings.Join(script, "\n"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A",
		"GIT_COMMITTER_EMAIL=a@x", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("making the repository: %v\n%s", err, out)
	}
	return dir
}

// devC is net/core/dev.c at commit id of the repository at dir.
func devC(t *testing.T, dir, id string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "show", id+":net/core/dev.c").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestBisectCommits: over ten commits, a fake build and run (bad when the
// commit's dev.c holds BUG, skipped when its subject says it does not
// build) names the commit that brought the bug, or the range skipped
// commits hide it in, and logs each step with its commit.
func TestBisectCommits(t *testing.T) {
	subjects := func(broken ...int) []string {
		var out []string
		for i := 1; i <= 10; i++ {
			s := fmt.Sprintf("net: change %d", i)
			for _, b := range broken {
				if b == i {
					s += " (does not build)"
				}
			}
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		broken []int
		bug    int
		// want is the printed answer, with C<k> for commit k's id.
		want string
	}{
		{"exact", nil, 6, "first bad commit: C6 net: change 6\n"},
		{"first commit", nil, 1, "first bad commit: C1 net: change 1\n"},
		{"last commit", nil, 10, "first bad commit: C10 net: change 10\n"},
		{"skips elsewhere", []int{3, 8}, 6, "first bad commit: C6 net: change 6\n"},
		{"culprit skipped", []int{6}, 6, "first bad commit: one of 2 commits (those between could not be tested):\n" +
			"  C6 net: change 6 (does not build)\n  C7 net: change 7\n" +
			"skipped (did not build or boot): C6:12 net: change 6 (does not build)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := historyRepo(t, subjects(tc.broken...), tc.bug)
			commits, err := kernels.RevList(context.Background(), dir, "v6.1", "main")
			if err != nil {
				t.Fatal(err)
			}
			if len(commits) != 11 || commits[0].Subject != "import 6.1" {
				t.Fatalf("RevList = %+v, want the import and ten commits", commits)
			}
			tested := 0
			test := func(k int) (runner.Outcome, error) {
				tested++
				if strings.Contains(commits[k].Subject, "does not build") {
					return runner.Skip, nil
				}
				if devC(t, dir, commits[k].ID) == "BUG" {
					return runner.Bad, nil
				}
				return runner.Good, nil
			}
			var out, log bytes.Buffer
			c := commitCandidates{commits}
			if _, err := search(c, "range", 1, test, &out, &log); err != nil {
				t.Fatal(err)
			}
			want := tc.want
			for k := len(commits) - 1; k >= 1; k-- {
				want = strings.ReplaceAll(want, fmt.Sprintf("C%d:12", k), commits[k].ID[:12])
				want = strings.ReplaceAll(want, fmt.Sprintf("C%d ", k), commits[k].ID+" ")
			}
			if out.String() != want {
				t.Errorf("answer:\n%s\nwant:\n%s", out.String(), want)
			}
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			if len(lines) != tested || tested > 2+len(commits)/2 {
				t.Errorf("%d probes, %d log lines:\n%s", tested, len(lines), log.String())
			}
			if want := fmt.Sprintf("commit %.12s (10/10): bad", commits[10].ID); lines[0] != want {
				t.Errorf("first step %q, want %q", lines[0], want)
			}
		})
	}
}

// TestBisectCommitsEnds: a range whose bad end passes, or whose good end
// already fails, is refused before bisecting.
func TestBisectCommitsEnds(t *testing.T) {
	dir := historyRepo(t, []string{"a", "b", "c"}, 2)
	commits, err := kernels.RevList(context.Background(), dir, "v6.1", "main")
	if err != nil {
		t.Fatal(err)
	}
	c := commitCandidates{commits}
	for _, tc := range []struct {
		name string
		test func(k int) (runner.Outcome, error)
		want string
	}{
		{"bad end passes", func(int) (runner.Outcome, error) { return runner.Good, nil }, "passed 1 runs: nothing to bisect"},
		{"good end fails", func(int) (runner.Outcome, error) { return runner.Bad, nil }, "good end of the range (commit " + commits[0].ID[:12] + " (0/3)) already fails"},
		{"bad end skipped", func(int) (runner.Outcome, error) { return runner.Skip, nil }, "does not build or boot"},
	} {
		var out, log bytes.Buffer
		_, err := search(c, "range", 1, tc.test, &out, &log)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
