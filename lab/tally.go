package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"napilab/results"
)

// tallyWriter passes a lab run's output through and counts its verdict
// lines (those that start with a verdict: runs, SKIPs, a failed build's
// ERRORs, perf comparisons), keeping the headlines of those that did not
// pass or skip, for the summary after the last run: in make test-kernel's
// hundreds of lines, what failed is then at the bottom.
type tallyWriter struct {
	w       io.Writer
	mu      sync.Mutex
	partial []byte // a line not yet ended
	counts  map[string]int
	bad     []string
}

// skip heads the lines of runs not started (lint-time SKIPs, perf SKIPs).
const skip = "SKIP"

// tallied are the first words that make a verdict line, in summary order.
var tallied = []string{string(results.Pass), skip, string(results.Inconclusive), string(results.Fail), string(results.Error)}

func newTallyWriter(w io.Writer) *tallyWriter {
	return &tallyWriter{w: w, counts: map[string]int{}}
}

func (t *tallyWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.line(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *tallyWriter) line(s string) {
	word, _, ok := strings.Cut(s, "  ")
	if !ok {
		return
	}
	for _, v := range tallied {
		if word == v {
			t.counts[v]++
			if v != string(results.Pass) && v != skip {
				t.bad = append(t.bad, s)
			}
			return
		}
	}
}

// summary prints the counts and the headlines of what did not pass, when
// there was more than one verdict (one is its own summary).
func (t *tallyWriter) summary(took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, line := verdictCounts(t.counts)
	if n < 2 {
		return
	}
	fmt.Fprintf(t.w, "\n%d verdicts in %s: %s\n", n, took.Round(time.Second), line)
	for _, s := range t.bad {
		fmt.Fprintf(t.w, "  %s\n", s)
	}
}

// verdictCounts is how many verdicts counts holds and their line ("3 PASS,
// 1 FAIL"), in summary order.
func verdictCounts(counts map[string]int) (n int, line string) {
	var parts []string
	for _, v := range tallied {
		if c := counts[v]; c > 0 {
			n += c
			parts = append(parts, fmt.Sprintf("%d %s", c, v))
		}
	}
	return n, strings.Join(parts, ", ")
}
