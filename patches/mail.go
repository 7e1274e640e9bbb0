package patches

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var (
	// replyRe matches reply and forward prefixes.
	replyRe = regexp.MustCompile(`(?i)^\s*(re|aw|fwd?):\s*`)
	// bracketRe matches one leading [...] group of a subject.
	bracketRe = regexp.MustCompile(`^\s*\[([^\]]*)\]\s*`)
	// numberRe and versionRe match bracket words: "3/5", "v2".
	numberRe  = regexp.MustCompile(`^(\d+)/(\d+)$`)
	versionRe = regexp.MustCompile(`^[vV](\d+)$`)
	// headerStartRe matches the first line of a patch file that starts with mail headers.
	headerStartRe = regexp.MustCompile(`(?i)^(from|subject|date|message-id|author):[ \t]`)
)

// parseMail parses one mail of an mbox, which starts at line start of
// file: headers, decoded body, in-body headers.
func parseMail(file string, raw []byte, start int) (mail, error) {
	_, rest, _ := bytes.Cut(raw, []byte("\n")) // the "From " separator
	msg, err := netmail.ReadMessage(bytes.NewReader(unescapeMboxrd(rest)))
	if err != nil {
		return mail{}, fmt.Errorf("failed to parse mail headers: %w", err)
	}
	body, err := decodeBody(msg.Header, msg.Body)
	if err != nil {
		return mail{}, err
	}
	var m mail
	m.patch = Patch{File: file, Diff: body, Date: msg.Header.Get("Date"),
		Author: decodeAddress(msg.Header.Get("From")), bodyLine: bodyLine(raw, msg.Header, start)}
	subject := decodeWords(msg.Header.Get("Subject"))
	text := applyInBody(&m.patch, &subject, string(body))
	m.patch.Subject, m.n, m.m, m.version, m.numbered, m.reply = parseSubject(subject)
	m.patch.Message = commitMessage(text)
	m.hasDiff = hasDiff(body)
	return m, nil
}

// bodyLine is the line of the file where the body of the mail raw (at
// line start) begins, or -1 when the body is encoded and its lines are not
// the file's.
func bodyLine(raw []byte, h netmail.Header, start int) int {
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "", "7bit", "8bit", "binary":
	default:
		return -1
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil && strings.HasPrefix(mt, "multipart/") {
		return -1
	}
	for line := start; len(raw) > 0; line++ { // line start is the "From " separator
		l, rest, _ := bytes.Cut(raw, []byte("\n"))
		if line > start && len(bytes.TrimRight(l, "\r")) == 0 {
			return line + 1
		}
		raw = rest
	}
	return -1
}

// parsePlain parses a patch file without an mbox separator: a quilt patch with
// or without mail-style headers, or a bare diff. The whole file is the diff.
func parsePlain(file string, data []byte) (Patch, error) {
	p := Patch{File: file, Diff: data, bodyLine: 1}
	text := string(data)
	var subject string
	numbered, n := false, 0
	if headerStartRe.Match(firstLine(data)) {
		if msg, err := netmail.ReadMessage(bytes.NewReader(data)); err == nil {
			p.Date = msg.Header.Get("Date")
			p.Author = decodeAddress(msg.Header.Get("From"))
			subject = decodeWords(msg.Header.Get("Subject"))
			body, _ := io.ReadAll(msg.Body)
			text = applyInBody(&p, &subject, string(body))
			p.Subject, n, _, _, numbered, _ = parseSubject(subject)
		}
	}
	if !hasDiff(data) {
		if numbered && n == 0 {
			return Patch{}, fmt.Errorf("%s: %w", file, errCoverLetter)
		}
		return Patch{}, fmt.Errorf("%s: no diff found: want a unified diff, a git format-patch mail or an mbox of [PATCH n/m] mails", file)
	}
	p.Message = commitMessage(text)
	if p.Subject == "" {
		// A bare diff with a description: its first line is the subject.
		first, rest, _ := strings.Cut(p.Message, "\n")
		p.Subject, p.Message = strings.TrimSpace(first), strings.TrimSpace(rest)
	}
	if p.Subject == "" {
		p.Subject = seriesName(filepath.Base(file))
	}
	return p, nil
}

// parseSubject strips reply prefixes and leading [...] groups, reading the
// numbering and version from them: "[PATCH net-next v2 3/5] x" -> "x", 3, 5, 2.
func parseSubject(s string) (subject string, n, m, version int, numbered, reply bool) {
	version = 1
	for {
		if loc := replyRe.FindStringIndex(s); loc != nil {
			s, reply = s[loc[1]:], true
			continue
		}
		g := bracketRe.FindStringSubmatch(s)
		if g == nil {
			break
		}
		s = s[len(g[0]):]
		for _, w := range strings.Fields(g[1]) {
			if nm := numberRe.FindStringSubmatch(w); nm != nil {
				n, _ = strconv.Atoi(nm[1])
				m, _ = strconv.Atoi(nm[2])
				numbered = true
			} else if v := versionRe.FindStringSubmatch(w); v != nil {
				version, _ = strconv.Atoi(v[1])
			}
		}
	}
	return strings.TrimSpace(s), n, m, version, numbered, reply
}

// applyInBody reads git's in-body headers (From:, Date:, Subject: lines
// followed by a blank line at the top of the body) and returns the rest.
func applyInBody(p *Patch, subject *string, body string) string {
	got := map[string]string{}
	rest := body
	for {
		line, after, ok := strings.Cut(rest, "\n")
		line = strings.TrimRight(line, "\r")
		if line == "" && len(got) > 0 {
			if v, ok := got["from"]; ok {
				p.Author = decodeAddress(v)
			}
			if v, ok := got["date"]; ok {
				p.Date = v
			}
			if v, ok := got["subject"]; ok {
				*subject = decodeWords(v)
			}
			return after
		}
		key, val, isHeader := strings.Cut(line, ": ")
		key = strings.ToLower(key)
		if !ok || !isHeader || key != "from" && key != "date" && key != "subject" {
			return body
		}
		got[key], rest = val, after
	}
}

// commitMessage returns the text before the diff: up to "---", "diff --git" or "--- a/".
func commitMessage(text string) string {
	lines := strings.Split(text, "\n")
	var out []string
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if l == "---" || strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "Index: ") ||
			strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") {
			break
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// hasDiff reports whether data holds a diff: a "diff --git" line or a "---"/"+++" pair.
func hasDiff(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	prevMinus := false
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "diff --git ") || prevMinus && strings.HasPrefix(l, "+++ ") {
			return true
		}
		prevMinus = strings.HasPrefix(l, "--- ")
	}
	return false
}

// decodeBody returns the text of a mail body: transfer encoding undone,
// and for multipart mails the text parts (message, attached patch) joined.
func decodeBody(h netmail.Header, r io.Reader) ([]byte, error) {
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		return decodeTransfer(h.Get("Content-Transfer-Encoding"), r)
	}
	mr := multipart.NewReader(r, params["boundary"])
	var out []byte
	for {
		part, err := mr.NextPart() // undoes quoted-printable itself
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read multipart mail: %w", err)
		}
		if pt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type")); pt != "" && !strings.HasPrefix(pt, "text/") {
			continue
		}
		data, err := decodeTransfer(part.Header.Get("Content-Transfer-Encoding"), part)
		if err != nil {
			return nil, err
		}
		out = append(out, data...)
	}
}

// decodeTransfer undoes a Content-Transfer-Encoding.
func decodeTransfer(cte string, r io.Reader) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("failed to decode mail body (%s): %w", cte, err)
	}
	return data, nil
}

// decodeWords decodes RFC 2047 encoded words; undecodable text stays as is.
func decodeWords(s string) string {
	if out, err := new(mime.WordDecoder).DecodeHeader(s); err == nil {
		return strings.TrimSpace(out)
	}
	return strings.TrimSpace(s)
}

// decodeAddress renders a From: value as "Name <address>".
func decodeAddress(s string) string {
	if s == "" {
		return ""
	}
	a, err := netmail.ParseAddress(s)
	if err != nil {
		return decodeWords(s)
	}
	if a.Name == "" {
		return a.Address
	}
	return a.Name + " <" + a.Address + ">"
}

// firstLine returns data's first line without its line ending.
func firstLine(data []byte) []byte {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	return bytes.TrimRight(line, "\r")
}
