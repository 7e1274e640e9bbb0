package patches

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDiffNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		diff  string
		strip int
		want  []string
		// refused, when set, is a substring of the refusal; line is its line.
		refused string
		line    int
	}{
		{"git diff", "diff --git a/net/core/dev.c b/net/core/dev.c\nindex 1234567..89abcde 100644\n--- a/net/core/dev.c\n+++ b/net/core/dev.c\n@@ -1 +1 @@\n-a\n+b\n",
			1, []string{"net/core/dev.c"}, "", 0},
		{"rename", "diff --git a/net/old.c b/net/new.c\nsimilarity index 100%\nrename from net/old.c\nrename to net/new.c\n",
			1, []string{"net/old.c", "net/new.c"}, "", 0},
		{"new file", "--- /dev/null\n+++ b/net/added.c\n@@ -0,0 +1 @@\n+x\n", 1, []string{"net/added.c"}, "", 0},
		{"quilt names with dates", "Index: linux/net/x.c\n--- linux.orig/net/x.c\t2024-01-01 00:00:00\n+++ linux/net/x.c\t2024-01-02 00:00:00\n",
			1, []string{"net/x.c"}, "", 0},
		{"inner space before a tab", "--- a/my file.c\t2024-01-01\n+++ b/my file.c\t2024-01-01\n", 1, []string{"my file.c"}, "", 0},
		{"space ends a name without a tab", "--- a/x.c 2024-01-01 00:00\n", 1, []string{"x.c"}, "", 0},
		{"too few slashes is ignored", "--- x.c\n+++ y.c\n", 1, nil, "", 0},
		{"strip 0", "--- net/x.c\n+++ net/x.c\n", 0, []string{"net/x.c"}, "", 0},
		{"strip 2 counts a run of slashes once", "+++ a//b/net/x.c\n", 2, []string{"net/x.c"}, "", 0},
		{"quoted name", "--- /dev/null\n+++ \"b/x\\npatching file evil/secret.txt\\n\"\n", 1, nil, "C-quoted", 2},
		{"quoted git name", "diff --git a/x \"b/x\\n\"\n", 1, nil, "C-quoted", 1},
		{"dot-dot", "--- a/../../etc/cron.d/job\n", 1, nil, ".. component", 1},
		{"dot-dot at the end", "+++ b/net/..\t2024\n", 1, nil, ".. component", 1},
		{"absolute with -p0", "--- /etc/passwd\n", 0, nil, "absolute", 1},
		{"control character", "+++ b/x\x01y\n", 1, nil, "control character", 1},
		{"DEL", "+++ b/x\x7fy\n", 1, nil, "control character", 1},
		{"non-ASCII", "+++ b/caf\xc3\xa9.c\n", 1, nil, "non-ASCII", 1},
		{"dot component", "+++ b/net/./x.c\n", 1, nil, "clean", 1},
		{"indented header", "  X+++ b/../x\n", 1, nil, ".. component", 1},
		{"RFC 934 nesting", "- --- a/../x\n", 1, nil, ".. component", 1},
		{"context header", "*** a/../x\t2024\n", 1, nil, ".. component", 1},
		{"Index line", "text\nIndex: a/../x\n", 1, nil, ".. component", 2},
		{"in the commit message", "Subject: x\n\n--- a/../x\n", 1, nil, ".. component", 3},
		{"new symlink", "diff --git a/evil b/evil\nnew file mode 120000\n", 1, nil, "symlink", 2},
		{"mode to symlink", "diff --git a/x b/x\nold mode 100644\nnew mode 120000\n", 1, nil, "symlink", 3},
		{"symlink edited", "diff --git a/x b/x\nindex 1234567..89abcde 120000\n", 1, nil, "symlink", 2},
		{"deleted symlink", "diff --git a/x b/x\ndeleted file mode 120000\n", 1, nil, "symlink", 2},
		{"executable file", "diff --git a/x b/x\nnew file mode 100755\n", 1, []string{"x"}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := diffNames([]byte(tc.diff), tc.strip)
			if tc.refused == "" {
				if err != nil || !reflect.DeepEqual(got, tc.want) {
					t.Errorf("diffNames = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			var le *lineError
			if !errors.As(err, &le) || !strings.Contains(le.reason, tc.refused) || le.line != tc.line {
				t.Errorf("diffNames = %q, %v; want a refusal at line %d saying %q", got, err, tc.line, tc.refused)
			}
		})
	}
}

// TestLoadRefusesUnsafeNames: lab patches check and lab kernel build load
// a series first; an unsafe name or a symlink is refused there, with the
// patch file and its line (an mbox's line too).
func TestLoadRefusesUnsafeNames(t *testing.T) {
	dir := t.TempDir()
	mbox := filepath.Join(dir, "evil.mbox")
	data := "From 1234 Mon Sep 17 00:00:00 2001\nFrom: A <a@x>\nSubject: [PATCH 1/2] ok\n\n---\n--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n" +
		"From 5678 Mon Sep 17 00:00:00 2001\nFrom: A <a@x>\nSubject: [PATCH 2/2] evil\n\nbody\n---\n--- a/x.c\n+++ b/../x.c\n"
	if err := os.WriteFile(mbox, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"symlink", "testdata/hostile/inject-delete", "testdata/hostile/inject-delete/0001-net-add-a-link.patch:6: refused file mode \"new file mode 120000\""},
		{"quoted name", "testdata/hostile/link-then-write", "testdata/hostile/link-then-write/0001-net-inject-a-file-name.patch:7: refused file name"},
		{"mbox line", mbox, mbox + ":18: refused file name \"../x.c\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(tc.path)
			if err == nil || !errors.Is(err, ErrUnsafeName) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load = %v, %v; want an error saying %q", s, err, tc.want)
			}
		})
	}
}

// TestCheckRefusesInjectedName: a series that reaches Check without Load
// is checked too: the quoted name that printed a fake "patching file" line
// is refused instead of reported as a file the patch touched.
func TestCheckRefusesInjectedName(t *testing.T) {
	requirePatch(t)
	diff, err := os.ReadFile("testdata/hostile/inject-delete/0002-net-inject-a-file-name.patch")
	if err != nil {
		t.Fatal(err)
	}
	s := &Series{Name: "inject", Patches: []Patch{{Index: 1, Subject: "inject", File: "0002.patch", Strip: 1, Diff: diff}}}
	results, err := Check(context.Background(), s, fixtureTree(t))
	for _, r := range results {
		for _, f := range r.Files {
			if strings.Contains(f, "evil") {
				t.Errorf("Check reports the injected file %q", f)
			}
		}
	}
	if !errors.Is(err, ErrUnsafeName) {
		t.Errorf("Check = %v, want the quoted name refused", err)
	}
}

// TestOutputNamesMustBeDiffNames: a file patch reports that the diff does
// not name is an error, not a file to copy.
func TestOutputNamesMustBeDiffNames(t *testing.T) {
	if err := checkOutputFiles([]string{"x.c"}, []string{"x.c", "y.c"}, ""); err != nil {
		t.Errorf("a named file: %v", err)
	}
	if err := checkOutputFiles([]string{"evil/secret.txt"}, []string{"x.c"}, ""); err == nil {
		t.Errorf("a file the diff does not name was accepted")
	}
}

func TestCheckName(t *testing.T) {
	for _, name := range []string{"net/core/dev.c", "Makefile", "a b", ".gitignore", "x..y/z"} {
		if err := CheckName(name); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{"", "/x", "a/../b", "..", "a/", "a//b", "./a", "a\nb", "a\tb", "a\x7f", "\xff"} {
		if err := CheckName(name); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", name)
		}
	}
}
