package patches

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLoadFormats(t *testing.T) {
	const (
		ada    = "Ada Lovelace <ada@example.org>"
		rene   = "René Dupont <rene@example.org>"
		clamp  = "net: napi: clamp work to the budget with min()"
		defer_ = "net: napi: add a defer_hard_irqs count"
	)
	tests := []struct {
		name     string
		paths    []string
		format   Format
		series   string
		subjects []string
		authors  []string
		strips   []int
	}{
		{"quilt folder", []string{"testdata/quilt"}, FormatQuilt, "quilt",
			[]string{clamp, defer_}, []string{ada, ada}, []int{1, 1}},
		{"quilt series file", []string{"testdata/quilt/series"}, FormatQuilt, "quilt",
			[]string{clamp, defer_}, []string{ada, ada}, []int{1, 1}},
		{"format-patch folder", []string{"testdata/folder"}, FormatFolder, "folder",
			[]string{clamp, defer_}, []string{ada, ada}, []int{1, 1}},
		{"format-patch list", []string{"testdata/folder/0001-net-napi-clamp-work-to-the-budget-with-min.patch",
			"testdata/folder/0002-net-napi-add-a-defer_hard_irqs-count.patch"}, FormatList,
			"0001-net-napi-clamp-work-to-the-budget-with-min", []string{clamp, defer_}, []string{ada, ada}, []int{1, 1}},
		{"lore mbox", []string{"testdata/series.mbox"}, FormatMbox, "series",
			[]string{clamp, defer_}, []string{rene, rene}, []int{1, 1}},
		{"plain diff", []string{"testdata/states/fuzz.patch"}, FormatDiff, "fuzz",
			[]string{"net: declare work in the poll loop"}, []string{""}, []int{1}},
		{"headers only", []string{"testdata/states/offset.patch"}, FormatDiff, "offset",
			[]string{"net: stop net_rx_action when a reschedule is due"}, []string{""}, []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadAll(tc.paths...)
			if err != nil {
				t.Fatal(err)
			}
			if s.Format != tc.format || s.Name != tc.series {
				t.Errorf("format, name = %s, %q; want %s, %q", s.Format, s.Name, tc.format, tc.series)
			}
			var subjects, authors []string
			var strips []int
			for i, p := range s.Patches {
				subjects, authors, strips = append(subjects, p.Subject), append(authors, p.Author), append(strips, p.Strip)
				if p.Index != i+1 {
					t.Errorf("patch %d has Index %d", i+1, p.Index)
				}
				if !hasDiff(p.Diff) || p.File == "" {
					t.Errorf("patch %d: File %q, diff %q", i+1, p.File, p.Diff)
				}
			}
			if !reflect.DeepEqual(subjects, tc.subjects) || !reflect.DeepEqual(authors, tc.authors) || !reflect.DeepEqual(strips, tc.strips) {
				t.Errorf("subjects %q, authors %q, strips %v\nwant %q, %q, %v", subjects, authors, strips, tc.subjects, tc.authors, tc.strips)
			}
		})
	}
}

func TestLoadMboxDetails(t *testing.T) {
	s, err := Load("testdata/series.mbox")
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := s.Patches[0], s.Patches[1]
	if p1.Date != "Tue, 03 Nov 2026 11:00:01 +0000" || p2.Date != "Tue, 03 Nov 2026 11:00:02 +0000" {
		t.Errorf("dates %q, %q", p1.Date, p2.Date)
	}
	// Quoted-printable undone, so patch sees "=" and not "=3D".
	if !bytes.Contains(p1.Diff, []byte("+\twork = min(work, budget);\n")) {
		t.Errorf("patch 1 diff not decoded:\n%s", p1.Diff)
	}
	if want := "napi_poll() open-codes min(). Use the helper.\n\nSigned-off-by: Ada Lovelace <ada@example.org>"; p1.Message != want {
		t.Errorf("patch 1 message = %q, want %q", p1.Message, want)
	}
	// mboxrd quoting undone.
	if !strings.HasPrefix(p2.Message, "From the busy-poll work: let a NAPI instance") {
		t.Errorf("patch 2 message = %q", p2.Message)
	}
	if p1.File != "testdata/series.mbox" {
		t.Errorf("File = %q", p1.File)
	}
}

func TestLoadGzipAndInBodyFrom(t *testing.T) {
	data, err := os.ReadFile("testdata/folder/0001-net-napi-clamp-work-to-the-budget-with-min.patch")
	if err != nil {
		t.Fatal(err)
	}
	// git format-patch puts the real author in the body when someone else sends the mail.
	data = bytes.Replace(data, []byte("\n\nnapi_poll()"), []byte("\n\nFrom: Grace Hopper <grace@example.org>\n\nnapi_poll()"), 1)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	path := filepath.Join(t.TempDir(), "t.mbox.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Patches[0]
	if s.Name != "t" || p.Author != "Grace Hopper <grace@example.org>" || !strings.HasPrefix(p.Message, "napi_poll()") {
		t.Errorf("name %q, author %q, message %q", s.Name, p.Author, p.Message)
	}
}

func TestLoadErrors(t *testing.T) {
	diff := "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
	mailf := func(subject string) string {
		return "From mboxrd@z Thu Jan  1 00:00:00 1970\nFrom: A <a@b>\nSubject: " + subject + "\n\nmsg\n---\n" + diff + "\n"
	}
	tests := []struct {
		name  string
		files map[string]string
		load  string
		want  string
	}{
		{"missing path", nil, "nope", "failed to load patch series"},
		{"series names a missing file", map[string]string{"s/series": "# c\n\na.patch\n"}, "s",
			"s/series:3: patch file " + "DIR/s/a.patch not found"},
		{"series option", map[string]string{"s/series": "a.patch -R\n", "s/a.patch": diff}, "s",
			`s/series:1: unsupported option "-R", want a patch file name and an optional -pN`},
		{"empty series", map[string]string{"s/series": "# nothing\n"}, "s", "the series file lists no patches"},
		{"stray file in folder", map[string]string{"f/0001-a.patch": diff, "f/README": "x"}, "f",
			"f/README: unexpected file in a patch folder: want a quilt \"series\" file or only git format-patch files"},
		{"subfolder in folder", map[string]string{"f/0001-a.patch": diff, "f/old/x": "x"}, "f", "f/old: unexpected folder"},
		{"only a cover letter", map[string]string{"f/0000-cover-letter.patch": mailf("[PATCH 0/2] x")}, "f", "no patches"},
		{"cover letter file", map[string]string{"c.patch": mailf("[PATCH 0/2] x")}, "c.patch", "only a cover letter"},
		{"not a diff", map[string]string{"n.patch": "hello\n"}, "n.patch", "n.patch: no diff found: want a unified diff"},
		{"missing mail", map[string]string{"m.mbox": mailf("[PATCH 1/3] a") + mailf("[PATCH 3/3] c")}, "m.mbox",
			"patch 2/3 is missing from the mbox"},
		{"short mbox", map[string]string{"m.mbox": mailf("[PATCH 1/3] a") + mailf("[PATCH 2/3] c")}, "m.mbox",
			"patch 3/3 is missing from the mbox"},
		{"duplicate mail", map[string]string{"m.mbox": mailf("[PATCH 1/2] a") + mailf("[PATCH 1/2] b") + mailf("[PATCH 2/2] c")},
			"m.mbox", `two mails for patch 1/2: "a" and "b"`},
		{"unnumbered mails", map[string]string{"m.mbox": mailf("[PATCH] a") + mailf("[PATCH] b")}, "m.mbox",
			"needs [PATCH n/m] subjects"},
		{"numbered without diff", map[string]string{"m.mbox": "From x Thu Jan  1 00:00:00 1970\nSubject: [PATCH 1/1] a\n\nno diff\n"},
			"m.mbox", `mail 1 ("a") is numbered 1/1 but holds no diff`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			_, err := Load(filepath.Join(dir, tc.load))
			if err == nil {
				t.Fatalf("Load succeeded, want an error containing %q", tc.want)
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error = %q\nwant it to contain %q", err, want)
			}
		})
	}
}

func TestParseSubject(t *testing.T) {
	tests := []struct {
		in                string
		subject           string
		n, m, version     int
		numbered, isReply bool
	}{
		{"[PATCH v2 3/5] net: x", "net: x", 3, 5, 2, true, false},
		{"[PATCH net-next v3 03/12] net: y", "net: y", 3, 12, 3, true, false},
		{"[RFC PATCH 1/2] [net] z", "z", 1, 2, 1, true, false},
		{"[net-next PATCH V4 0/7] cover", "cover", 0, 7, 4, true, false},
		{"Re: [PATCH 2/2] net: w", "net: w", 2, 2, 1, true, true},
		{"[PATCH] single", "single", 0, 0, 1, false, false},
		{"plain subject [not a prefix]", "plain subject [not a prefix]", 0, 0, 1, false, false},
	}
	for _, tc := range tests {
		subject, n, m, version, numbered, reply := parseSubject(tc.in)
		if subject != tc.subject || n != tc.n || m != tc.m || version != tc.version || numbered != tc.numbered || reply != tc.isReply {
			t.Errorf("parseSubject(%q) = %q %d/%d v%d numbered=%v reply=%v", tc.in, subject, n, m, version, numbered, reply)
		}
	}
}

func TestSeriesHash(t *testing.T) {
	a, err := Load("testdata/quilt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Load("testdata/quilt/series")
	if a.Hash() != b.Hash() || len(a.Hash()) != 64 {
		t.Errorf("same series, hashes %s and %s", a.Hash(), b.Hash())
	}
	c := Concat("c", a)
	c.Patches[1].Diff = append(append([]byte(nil), c.Patches[1].Diff...), ' ')
	if c.Hash() == a.Hash() {
		t.Error("a changed diff kept the hash")
	}
	d := Concat("d", a)
	d.Patches[0].Strip = 0
	if d.Hash() == a.Hash() {
		t.Error("a changed strip level kept the hash")
	}
	if a.Patches[1].Diff[len(a.Patches[1].Diff)-1] == ' ' {
		t.Error("Concat shared the patches with its input")
	}
}

// writeFiles creates files (name -> content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
