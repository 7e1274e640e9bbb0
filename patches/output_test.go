package patches

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseOutput(t *testing.T) {
	out := `patching file 'net/core/my file.c'
patching file net/core/gro.c (renamed from net/core/old_gro.c)
Hunk #1 succeeded at 10 with fuzz 2 (offset -1 line).
Hunk #3 FAILED at 200 (different line endings).
1 out of 3 hunks FAILED -- saving rejects to file net/core/gro.c.rej
can't find file to patch at input line 40
Perhaps you used the wrong -p or --strip option?
The text leading up to this was:
--------------------------
|diff --git a/drivers/net/gone.c b/drivers/net/gone.c
|--- a/drivers/net/gone.c	2024-01-01 00:00:00
|+++ /dev/null
--------------------------
No file to patch.  Skipping patch.
checking file kernel/softirq.c
Reversed (or previously applied) patch detected!  Skipping patch.
`
	got := parseOutput(out, 1)
	want := outcome{
		files: []string{"net/core/my file.c", "net/core/gro.c", "kernel/softirq.c"},
		hunks: []Hunk{
			{File: "net/core/gro.c", Number: 1, Line: 10, Offset: -1, Fuzz: 2},
			{File: "net/core/gro.c", Number: 3, Line: 200, Failed: true},
		},
		missing:  []string{"drivers/net/gone.c"},
		reversed: []string{"kernel/softirq.c"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseOutput =\n%+v\nwant\n%+v", got, want)
	}
	if s := got.hunks[0].String(); s != "net/core/gro.c hunk #1 at 10: offset -1 lines, fuzz 2" {
		t.Errorf("Hunk.String() = %q", s)
	}
}

// FuzzLoadFile feeds patch file parsing arbitrary bytes, seeded with the testdata patches.
func FuzzLoadFile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.patch")
	for _, p := range append(seeds, "testdata/series.mbox") {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, _, err := parseFile("fuzz.patch", data)
		if err == nil && len(ps) == 0 {
			t.Error("parseFile returned no patches and no error")
		}
		for _, p := range ps {
			if !hasDiff(p.Diff) {
				t.Errorf("parseFile returned a patch without a diff: %q", p.Diff)
			}
		}
	})
}

// FuzzParseOutput checks that no patch output makes the parser panic, and
// that a file name it reads never spans lines.
func FuzzParseOutput(f *testing.F) {
	f.Add("checking file a\nHunk #1 succeeded at 3 with fuzz 1 (offset 2 lines).\n")
	f.Add("can't find file to patch at input line 3\n|--- a/x\n|+++ b/x\nNo file to patch.  Skipping patch.\n")
	// What patch printed for the quoted name of testdata/hostile/inject-delete.
	f.Add("patching symbolic link evil\npatching file 'x\npatching file evil/secret.txt\n'\n")
	f.Add("Hunk #99999999999999999999 FAILED at 99999999999999999999 with fuzz 99999999999999999999 (offset -99999999999999999999 lines)\n")
	f.Add("patching file 'it'\\''s'\nReversed (or previously applied) patch detected!  Skipping patch.\npatch: **** malformed patch at line 7: @@\n")
	f.Fuzz(func(t *testing.T, out string) {
		for strip := 0; strip < 3; strip++ {
			o := parseOutput(out, strip)
			for _, name := range append(o.files, o.missing...) {
				if strings.Contains(name, "\n") {
					t.Fatalf("file name %q spans lines", name)
				}
			}
		}
	})
}
