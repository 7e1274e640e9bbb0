package patches

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
)

// mail is one parsed mail of an mbox.
type mail struct {
	patch    Patch
	n, m     int  // [PATCH n/m]
	version  int  // [PATCH v2 ...], 1 when unversioned
	numbered bool // the subject has n/m
	reply    bool // Re: ...
	hasDiff  bool
}

var (
	// fromLineRe matches an mbox separator as git mailsplit does: "From <id> <date with hh:mm> <year>".
	fromLineRe = regexp.MustCompile(`^From \S+ .*\d\d:\d\d.* \d{4}\s*$`)
	// mboxrdRe matches body lines that mboxrd escaped with '>'.
	mboxrdRe = regexp.MustCompile(`^>+From `)
)

// splitMbox splits data at mbox "From " separator lines; it returns nil when
// data does not start with one, i.e. is not a mail file. Like git mailsplit it
// does not insist on a blank line before a separator: the date pattern is
// strict enough, and mboxrd escapes "From " at the start of body lines.
func splitMbox(data []byte) [][]byte {
	if !fromLineRe.Match(firstLine(data)) {
		return nil
	}
	var mails [][]byte
	start := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off + 1
		}
		line := data[off:end]
		if off > start && fromLineRe.Match(bytes.TrimRight(line, "\r\n")) {
			mails = append(mails, data[start:off])
			start = off
		}
		off = end
	}
	return append(mails, data[start:])
}

// patchesFromMails keeps the patch mails of an mbox, newest version only, ordered by n.
func patchesFromMails(file string, raws [][]byte) ([]Patch, error) {
	var keep []mail
	covers, start := 0, 1
	for i, raw := range raws {
		m, err := parseMail(file, raw, start)
		start += bytes.Count(raw, []byte("\n"))
		if err != nil {
			return nil, fmt.Errorf("%s: mail %d: %w", file, i+1, err)
		}
		switch {
		case m.reply:
		case m.numbered && m.n == 0:
			covers++
		case !m.hasDiff && m.numbered:
			return nil, fmt.Errorf("%s: mail %d (%q) is numbered %d/%d but holds no diff", file, i+1, m.patch.Subject, m.n, m.m)
		case m.hasDiff:
			keep = append(keep, m)
		}
	}
	if len(keep) == 0 {
		if covers > 0 {
			return nil, fmt.Errorf("%s: %w", file, errCoverLetter)
		}
		return nil, fmt.Errorf("%s: no patch mails: want mails with a unified diff, subjects like [PATCH n/m]", file)
	}
	newest := 0
	for _, m := range keep {
		newest = max(newest, m.version)
	}
	var ms []mail
	for _, m := range keep {
		if m.version == newest {
			ms = append(ms, m)
		}
	}
	if len(ms) > 1 {
		if err := checkNumbering(file, ms); err != nil {
			return nil, err
		}
	}
	out := make([]Patch, len(ms))
	for i, m := range ms {
		out[i] = m.patch
	}
	return out, nil
}

// checkNumbering sorts the mails of one version by n and checks that 1..m are all there once.
func checkNumbering(file string, ms []mail) error {
	for _, m := range ms {
		if !m.numbered {
			return fmt.Errorf("%s: mail %q is not numbered: an mbox of several patches needs [PATCH n/m] subjects", file, m.patch.Subject)
		}
	}
	sortMails(ms)
	total := ms[0].m
	for i, m := range ms {
		if m.m != total {
			return fmt.Errorf("%s: mails disagree on the series length: %d/%d and %d/%d", file, ms[0].n, total, m.n, m.m)
		}
		if i > 0 && m.n == ms[i-1].n {
			return fmt.Errorf("%s: two mails for patch %d/%d: %q and %q", file, m.n, m.m, ms[i-1].patch.Subject, m.patch.Subject)
		}
		if m.n != i+1 {
			return fmt.Errorf("%s: patch %d/%d is missing from the mbox", file, i+1, total)
		}
	}
	if len(ms) != total {
		return fmt.Errorf("%s: patch %d/%d is missing from the mbox", file, len(ms)+1, total)
	}
	return nil
}

// unescapeMboxrd drops one '>' from body lines like ">From " (mboxrd quoting).
func unescapeMboxrd(data []byte) []byte {
	if !bytes.Contains(data, []byte(">From ")) {
		return data
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, l := range lines {
		if mboxrdRe.Match(l) {
			lines[i] = l[1:]
		}
	}
	return bytes.Join(lines, nil)
}

// sortMails orders numbered mails by n, keeping file order for equal n.
func sortMails(ms []mail) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].n < ms[j].n })
}
