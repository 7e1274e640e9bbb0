package scenarios

import (
	"fmt"
	"strings"
	"time"

	"napilab/internal/wire"
	"napilab/results"
)

// Threads checks that tasks with Prefix exist (at least Min) in every
// snapshot where the file Path holds Equals.
type Threads struct {
	Prefix string   `yaml:"prefix"`
	Path   string   `yaml:"path"`
	Netns  string   `yaml:"netns"`
	Equals string   `yaml:"equals"`
	Min    int      `yaml:"min"`   // default 1
	Every  Duration `yaml:"every"` // snapshot period, default 50ms
}

func (x *Threads) setDefaults() {
	x.Min = max(x.Min, 1)
	if x.Every == 0 {
		x.Every = Duration(50 * time.Millisecond)
	}
}

func (x *Threads) check(k *checker, a *Assert) {
	k.checkNetns(a.Pos, x.Netns)
	if x.Prefix == "" || x.Path == "" {
		k.c.add(a.Pos, "threads-while needs prefix: and path:")
	}
}

func (x *Threads) explain(*Assert) string {
	return fmt.Sprintf(">= %d %s* threads whenever %s = %q (sampled every %v)", x.Min, x.Prefix, x.Path, x.Equals, x.Every.D())
}

func (x *Threads) name() string { return fmt.Sprintf("%s* while %s=%s", x.Prefix, x.Path, x.Equals) }

func (x *Threads) timingOnly() bool { return false }

func (x *Threads) metrics() []string { return nil }

// FileSource names the wire source that reads a file, in a netns or not.
func FileSource(netns, path string) string {
	if netns != "" {
		return wire.PrefixNsFile + netns + ":" + path
	}
	return wire.PrefixFile + path
}

// flipPeriod is the shortest period at which the timeline writes path: a
// snapshot shorter than that cannot see the file flip away and back.
func flipPeriod(steps []*Step, path string) float64 {
	p := 1.0
	for _, st := range steps {
		if st.Write != nil && st.Write.Path == path && st.Every > 0 {
			p = min(p, st.Every.D().Seconds())
		}
		p = min(p, flipPeriod(st.Parallel, path))
	}
	return p
}

// straddles says whether two or more of the writes may have taken effect
// while the snapshot s was read (between its request and its reply).
func straddles(s Snapshot, writes [][2]float64) bool {
	if s.Sent == 0 {
		return false // recorded before requests were timed
	}
	n := 0
	for _, w := range writes {
		if w[0] <= s.Host && w[1] >= s.Sent {
			n++
		}
	}
	return n >= 2
}

func (x *Threads) eval(sc *Scenario, rec Record, a *Assert) (r results.Assert) {
	r = a.result(x)
	r.Bound = fmt.Sprintf(">= %d %s* threads in every snapshot with %s = %s", x.Min, x.Prefix, x.Path, x.Equals)
	f := FileSource(x.Netns, x.Path)
	tsrc := wire.PrefixThreads + x.Prefix
	period := flipPeriod(sc.Timeline, x.Path)
	writes := rec.Writes(x.Path)
	var matching, bad, slow, straddling int
	low := -1
	var example string
	for _, s := range rec.Snapshots(a) {
		// A snapshot is three reads; one that took a whole flip period (a
		// vCPU preempted under TCG) may have seen the file flip away and
		// back around the thread list.
		if s.Data.Took >= period {
			slow++
			continue
		}
		// Under TCG two writes of a flip may land closer than their
		// period (a late write, then one on time): a snapshot during two
		// of them may have seen the file flip away and back too.
		if straddles(s, writes) {
			straddling++
			continue
		}
		v1, v2 := strings.TrimSpace(s.Data.Values[f]), strings.TrimSpace(s.Data.Values[f+"#2"])
		if v1 != x.Equals || v2 != x.Equals {
			continue
		}
		matching++
		n := 0
		if l := strings.TrimSpace(s.Data.Values[tsrc]); l != "" {
			n = len(strings.Split(l, "\n"))
		}
		if low < 0 || n < low {
			low = n
		}
		if n < x.Min {
			bad++
			if example == "" {
				example = fmt.Sprintf("at guest t=%.2fs: %d threads", s.Data.T, n)
			}
		}
	}
	if slow > 0 {
		defer func() { r.Measured += fmt.Sprintf(" (%d slow snapshots skipped)", slow) }()
	}
	if straddling > 0 {
		defer func() {
			r.Measured += fmt.Sprintf(" (%d snapshots during two writes of %s skipped)", straddling, x.Path)
		}()
	}
	switch {
	case matching == 0 && slow+straddling > 0:
		// Every snapshot was too slow to trust: the lab could not look.
		r.Unmeasured = true
		r.Measured = fmt.Sprintf("no snapshot read %s within a flip period", x.Path)
	case matching == 0:
		r.Measured = fmt.Sprintf("no snapshot saw %s = %s", x.Path, x.Equals)
	case bad > 0:
		r.Measured = fmt.Sprintf("%d of %d snapshots had fewer (min %d)", bad, matching, low)
		r.Detail = example
	default:
		r.Passed = true
		r.Measured = fmt.Sprintf("min %d threads over %d snapshots", low, matching)
	}
	return r
}
