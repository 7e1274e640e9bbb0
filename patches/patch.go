package patches

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
)

// Patch is one patch of a series.
type Patch struct {
	// Index is the 1-based position of the patch in its series.
	Index int
	// Subject is the one-line summary without "[PATCH v2 3/5]" prefixes.
	Subject string
	// Author is the author as "Name <address>", or empty when the patch does not say.
	Author string
	// Date is the Date: header as written, or empty.
	Date string
	// Message is the commit message body: the text after the subject, before the diff.
	Message string
	// File is the file the patch was read from; several patches share an mbox.
	File string
	// Strip is patch's -p level: 1 unless a quilt series file says otherwise.
	Strip int
	// Diff is the text fed to GNU patch: the diff, with the commit message in front.
	Diff []byte

	// bodyLine is the line of File where Diff starts; -1 when Diff is a
	// decoded mail body whose lines are not File's, 0 when unknown.
	bodyLine int
}

// Format says how a series was stored.
type Format string

// Series formats reported in Series.Format.
const (
	// FormatQuilt is a folder with a series file.
	FormatQuilt Format = "quilt"
	// FormatFolder is a folder of git format-patch files.
	FormatFolder Format = "folder"
	// FormatMbox is a file of one or more mails (git format-patch output or a lore mbox).
	FormatMbox Format = "mbox"
	// FormatDiff is a single plain patch file, maybe with a description in front.
	FormatDiff Format = "diff"
	// FormatList is several series concatenated by Concat.
	FormatList Format = "list"
)

// Series is an ordered list of patches.
type Series struct {
	// Name is a short name for humans: the folder or file name.
	Name string
	// Path is the path the series was loaded from.
	Path string
	// Format is the layout the series was read from.
	Format Format
	// Patches are the patches in application order.
	Patches []Patch
}

// hashFormat versions Series.Hash; bump it when the hashed fields change.
const hashFormat = "napilab-series-1"

// Hash returns the hex sha256 of what applying the series depends on: each
// patch's strip level and text, in order. Names, paths and the mail headers
// outside the diff text do not count.
func (s *Series) Hash() string {
	h := sha256.New()
	field(h, "format", []byte(hashFormat))
	for _, p := range s.Patches {
		field(h, "strip", []byte(strconv.Itoa(p.Strip)))
		field(h, "diff", p.Diff)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Concat joins series into one, renumbering the patches; name names the result.
func Concat(name string, series ...*Series) *Series {
	if len(series) == 1 {
		s := *series[0]
		s.Patches = append([]Patch(nil), s.Patches...)
		return &s
	}
	out := &Series{Name: name, Format: FormatList}
	for _, s := range series {
		for _, p := range s.Patches {
			p.Index = len(out.Patches) + 1
			out.Patches = append(out.Patches, p)
		}
	}
	return out
}

// String renders "2 kthread: make __kthread_should_park() visible again".
func (p *Patch) String() string {
	return fmt.Sprintf("%d %s", p.Index, p.Subject)
}

// field writes a length-prefixed, named value so that boundaries are unambiguous.
func field(h hash.Hash, name string, data []byte) {
	fmt.Fprintf(h, "%s %d\n", name, len(data))
	h.Write(data)
}
