package explore

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Corpus holds the programs that reached something no earlier program did,
// and how often each feature has been reached. Next draws a quarter of its
// programs as mutations of them (syzkaller's way), choosing the programs
// whose features are rarest most often, so later programs start from the
// states few reached.
type Corpus struct {
	Programs []Program
	feats    [][]string     // the features of each program
	hits     map[string]int // the runs that reached each feature
}

// Reached is what a run of a program showed beside the program itself:
// the steps the kernel refused (by the generated step name, s3 or s3.1)
// and the calls of the functions counted.
type Reached struct {
	Refused map[string]bool
	Calls   map[string]uint64
}

// Features are the states a run showed the kernel in: each step's action
// taken or refused, each knob refused after each other knob, the delay
// probe's place, and each counted function's calls in powers of two.
// The program's own orders are not features: almost every program has a new
// one, and a corpus that keeps everything biases nothing.
func Features(p Program, r Reached) []string {
	var fs []string
	prev := "start"
	var add func(st Step, name string)
	add = func(st Step, name string) {
		for j, br := range st.Branches {
			add(br, fmt.Sprintf("%s.%d", name, j+1))
		}
		if len(st.Branches) > 0 {
			return
		}
		w, took := word(st), "taken"
		if r.Refused[name] {
			took = "refused"
		}
		fs = append(fs, w+" "+took)
		if took == "refused" {
			fs = append(fs, prev+" > "+st.Kind+" refused")
		}
		prev = st.Kind
	}
	for i, st := range p.Steps {
		add(st, fmt.Sprintf("s%d", i+1))
	}
	if p.Delay != nil {
		fs = append(fs, "delay at "+p.Delay.At)
	}
	for _, l := range p.BusyPoll {
		fs = append(fs, l+" busy-polls")
	}
	for f, n := range r.Calls {
		if n > 0 {
			fs = append(fs, fmt.Sprintf("%s: 2^%d calls", f, bits.Len64(n)-1))
		}
	}
	slices.Sort(fs)
	return slices.Compact(fs)
}

// word names a step for features: its action without the values that
// only time it.
func word(st Step) string {
	if st.Kind == "sleep" {
		return "sleep"
	}
	if st.Repeat != "" {
		return st.Action + " repeated"
	}
	return st.Action
}

// Add records the features of a run of p and keeps p when any is new. It
// returns how many were new.
func (c *Corpus) Add(p Program, features []string) int {
	if c.hits == nil {
		c.hits = map[string]int{}
	}
	n := 0
	for _, f := range features {
		if c.hits[f] == 0 {
			n++
		}
		c.hits[f]++
	}
	if n > 0 {
		c.Programs = append(c.Programs, p)
		c.feats = append(c.feats, features)
	}
	return n
}

// Features is how many distinct features the corpus has seen.
func (c *Corpus) Features() int { return len(c.hits) }

// pick chooses a corpus program, each weighted by the sum of 1/hits² of
// its features: one that alone reached a state weighs far more than one
// whose states every run reaches.
func (c *Corpus) pick(r *rand.Rand) Program {
	weights := make([]float64, len(c.Programs))
	total := 0.0
	for i, fs := range c.feats {
		for _, f := range fs {
			weights[i] += 1 / float64(max(c.hits[f]*c.hits[f], 1))
		}
		total += weights[i]
	}
	x := r.Float64() * total
	for i, w := range weights {
		if x -= w; x < 0 {
			return c.Programs[i]
		}
	}
	return c.Programs[len(c.Programs)-1]
}

// Next is the program of seed: with a corpus, one time in four a mutation
// of one of its programs (pick), else drawn afresh (on fake kernels, a half
// found nothing sooner than a quarter: BenchmarkExploreGuided). It is
// deterministic for a seed, options and corpus.
func (c *Corpus) Next(seed uint64, o Options) Program {
	r := rand.New(rand.NewPCG(seed, 0x636f7270)) // "corp"
	if len(c.Programs) == 0 || r.IntN(4) != 0 {
		return Generate(seed, o)
	}
	return Mutate(c.pick(r), c.pick(r), seed, o)
}

// Mutate changes p in one to three ways: a step inserted, removed,
// replaced, swapped with its neighbour, repeated or not, the tail of other
// spliced on, the delay probe added, dropped or moved. The result keeps
// the generator's rules and at most twice Options.Steps entries.
func Mutate(p, other Program, seed uint64, o Options) Program {
	if o.Steps <= 0 {
		o.Steps = DefaultSteps
	}
	r := rand.New(rand.NewPCG(seed, 0x6d757461)) // "muta"
	m := Program{Seed: seed, Parent: p.Seed, Steps: slices.Clone(p.Steps), Delay: p.Delay, BusyPoll: slices.Clone(p.BusyPoll)}
	for range 1 + r.IntN(3) {
		d := newDrawer(r, o, m.Delay != nil)
		n := len(m.Steps)
		switch op := r.IntN(9) - 2; { // inserts three times in nine: a new state's program grows from it
		case op <= 0 || n == 0:
			i := r.IntN(n + 1)
			m.Steps = slices.Insert(m.Steps, i, d.entry())
		case op == 1 && n > 1:
			i := r.IntN(n)
			m.Steps = slices.Delete(m.Steps, i, i+1)
		case op == 2:
			m.Steps[r.IntN(n)] = d.entry()
		case op == 3 && n > 1:
			i := r.IntN(n - 1)
			m.Steps[i], m.Steps[i+1] = m.Steps[i+1], m.Steps[i]
		case op == 4:
			i := r.IntN(n)
			if st := &m.Steps[i]; len(st.Branches) == 0 && st.Kind != "sleep" {
				if st.Repeat != "" {
					st.Repeat = ""
				} else {
					st.Repeat = fmt.Sprintf(", every: %dms, count: %d", pick(r, 20, 50, 100), 2+r.IntN(8))
				}
			}
		case op == 5 && len(other.Steps) > 0:
			cut, from := r.IntN(n+1), r.IntN(len(other.Steps))
			m.Steps = append(m.Steps[:cut:cut], other.Steps[from:]...)
			if m.Delay == nil {
				m.Delay = other.Delay
			}
		case r.IntN(3) == 0: // a load starts or stops busy polling
			l := pick(r, loadNames...)
			if i := slices.Index(m.BusyPoll, l); i >= 0 {
				m.BusyPoll = slices.Delete(m.BusyPoll, i, i+1)
			} else {
				m.BusyPoll = append(m.BusyPoll, l)
				slices.Sort(m.BusyPoll)
			}
		default:
			if m.Delay == nil || r.IntN(2) == 0 {
				m.Delay = newDelay(r)
			} else {
				m.Delay = nil
			}
		}
	}
	if len(m.Steps) > 2*o.Steps {
		m.Steps = m.Steps[:2*o.Steps]
	}
	return m.sane()
}
