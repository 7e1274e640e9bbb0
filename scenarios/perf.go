package scenarios

import (
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
	"gopkg.in/yaml.v3"

	"napilab/internal/names"
	"napilab/internal/suggest"
	"napilab/results/metrics"
	"napilab/results/stats"
)

// Perf makes a scenario a performance check: the tested kernel and a
// baseline each run it Repeat times, and every budget compares one figure of
// the two sides. A breach is a FAIL; too few runs to tell is INCONCLUSIVE.
type Perf struct {
	// Baseline is what the tested kernel is compared with: "base" (the
	// default: the spec the tested kernel extends, without its patches), a
	// kernel spec path ending in .yaml, or the name of a stored baseline.
	Baseline string `yaml:"baseline"`
	// Repeat is the runs per side, default 5; at least the runs the rank
	// test needs to reach p < alpha at all.
	Repeat int `yaml:"repeat"`
	// MaxRepeat is the runs per side at most: when the first Repeat runs
	// leave a budget INCONCLUSIVE, both sides run on up to MaxRepeat and the
	// budgets are checked once more. Default 2×Repeat; equal to Repeat turns
	// the second look off.
	MaxRepeat int `yaml:"max_repeat"`
	// Alpha is the level of the rank test, default 0.05.
	Alpha float64 `yaml:"alpha"`
	// Modes name the ways the scenario can measure the stack, each a set
	// of parameter values: {softirq: {threaded: "0"}, threaded: {threaded:
	// "1"}}. lab run measures every mode a kernel's series is about (its
	// spec's modes:, or all of them), each its own verdict.
	Modes   map[string]map[string]string `yaml:"modes"`
	Budgets []*Budget                    `yaml:"budgets"` // at least one
	Pos     Pos                          `yaml:"-"`

	written int // budget entries in the file, counting those that failed to decode
}

// Budget bounds how far one figure may move against the baseline, in one
// direction: exactly one of MaxDrop, MaxRise and MaxAbove (two budgets for
// both directions).
type Budget struct {
	// Metric is a figure name as lab compare prints it: a metric name
	// (softirqs.NET_RX.cpu0, optionally with /s for its rate), a load's
	// <load>.rx_pps or <load>.sent_pps, an rr load's <load>.p50_us, p99_us
	// or p999_us, "softirqs.NET_RX per datagram", or napi.polls.<...>.
	Metric  string  `yaml:"metric"`
	MaxDrop Percent `yaml:"max_drop"` // largest allowed drop, like 5%
	MaxRise Percent `yaml:"max_rise"` // largest allowed rise, like 10%
	// MaxAbove is the largest allowed rise in the figure's own units over
	// the baseline's median, like 0.02 (NET_RX softirqs per datagram): for
	// a figure whose baseline is about 0, where a percentage of it means
	// nothing.
	MaxAbove float64 `yaml:"max_above" jsonschema:"exclusiveMinimum=0"`
	// Noise is the figure's measured run-to-run coefficient of variation
	// under TCG (n=10), written down with the budget; it sets the runs the
	// budget needs.
	Noise Percent `yaml:"noise"`
	// Spread is a max_above budget's noise: the figure's run-to-run
	// standard deviation in its own units.
	Spread float64 `yaml:"spread" jsonschema:"exclusiveMinimum=0"`
	// Modes are the perf modes the budget holds in (default all): a
	// figure's noise and meaning can differ from mode to mode.
	Modes []string `yaml:"modes"`
	Pos   Pos      `yaml:"-"`
}

// Mode is the perf mode the scenario's parameters select: of the modes
// whose every value is in force, the one that sets the most (tcp's
// {threaded: 0, proto: tcp} over softirq's {threaded: 0}), the first by
// name among equals; "" when none is (or it declares none).
func (s *Scenario) Mode() string {
	if s.Perf == nil {
		return ""
	}
	mode, most := "", 0
	for _, name := range sortedKeys(s.Perf.Modes) {
		set := s.Perf.Modes[name]
		match := true
		for k, v := range set {
			match = match && s.Values[k] == v
		}
		if match && len(set) > most {
			mode, most = name, len(set)
		}
	}
	return mode
}

// ModeNames lists the perf modes in name order (none without perf: or modes:).
func (s *Scenario) ModeNames() []string {
	if s.Perf == nil {
		return nil
	}
	return sortedKeys(s.Perf.Modes)
}

// ForMode reopens the scenario in a perf mode: the mode's values, with
// params (the caller's) over them.
func (s *Scenario) ForMode(mode string, params map[string]string) (*Scenario, map[string]string, error) {
	set, ok := s.Perf.Modes[mode]
	if !ok {
		return nil, nil, fmt.Errorf("%s: no perf mode %q (modes: %s)", s.Path, mode, strings.Join(s.ModeNames(), ", "))
	}
	merged := maps.Clone(set)
	maps.Copy(merged, params)
	out, err := Open(s.Path, merged)
	return out, merged, err
}

// PinsMode reports whether params set a value some perf mode sets: the
// caller chose the mode's parameters, so the modes are not expanded.
func (s *Scenario) PinsMode(params map[string]string) bool {
	if s.Perf == nil {
		return false
	}
	for _, set := range s.Perf.Modes {
		for k := range set {
			if _, ok := params[k]; ok {
				return true
			}
		}
	}
	return false
}

// BudgetsInForce are the budgets that hold in the scenario's mode: those
// without modes:, and those naming it.
func (s *Scenario) BudgetsInForce() []*Budget {
	mode := s.Mode()
	var out []*Budget
	for _, b := range s.Perf.Budgets {
		if len(b.Modes) == 0 || slices.Contains(b.Modes, mode) {
			out = append(out, b)
		}
	}
	return out
}

// Perf defaults and the power the runs-needed estimates assume.
const (
	BaselineBase  = "base"
	DefaultRepeat = 5
	DefaultAlpha  = 0.05
	PerfPower     = 0.8
)

// Bounds returns the budget's figure, its tolerances as fractions and its
// MaxAbove (0 for what it does not bound).
func (b *Budget) Bounds() (metric string, maxDrop, maxRise, maxAbove float64) {
	return b.Metric, float64(b.MaxDrop), float64(b.MaxRise), b.MaxAbove
}

// Tolerance returns the budget's key ("max_drop", "max_rise" or
// "max_above") and its tolerance as written ("5%", "0.02").
func (b *Budget) Tolerance() (string, string) {
	switch {
	case b.MaxDrop > 0:
		return "max_drop", b.MaxDrop.String()
	case b.MaxAbove > 0:
		return "max_above", strconv.FormatFloat(b.MaxAbove, 'g', -1, 64)
	}
	return "max_rise", b.MaxRise.String()
}

// bounds counts the directions the budget bounds.
func (b *Budget) bounds() int {
	n := 0
	for _, set := range []bool{b.MaxDrop > 0, b.MaxRise > 0, b.MaxAbove != 0} {
		if set {
			n++
		}
	}
	return n
}

// noise is the budget's run-to-run noise on its tolerance's scale (CV for
// a percentage, Spread for MaxAbove) and the tolerance, both as numbers,
// and the noise as written ("3%", "0.004").
func (b *Budget) noise() (noise, tol float64, written string) {
	switch {
	case b.MaxAbove != 0:
		return b.Spread, b.MaxAbove, strconv.FormatFloat(b.Spread, 'g', -1, 64)
	case b.MaxDrop > 0:
		return float64(b.Noise), float64(b.MaxDrop), b.Noise.String()
	}
	return float64(b.Noise), float64(b.MaxRise), b.Noise.String()
}

// noiseKind names what noise() returns: "spread" for MaxAbove, else kind.
func (b *Budget) noiseKind(kind string) string {
	if b.MaxAbove != 0 {
		return "spread"
	}
	return kind
}

// RunsNeeded returns the runs per side the budget needs at its noise
// (stats.RunsNeeded at PerfPower), or 0 when its noise is not given.
func (b *Budget) RunsNeeded(alpha float64) int {
	noise, tol, _ := b.noise()
	return stats.RunsNeeded(noise, tol, alpha, PerfPower)
}

// MinRepeat is the fewest runs per side at which the rank test can reach
// p < alpha at all.
func MinRepeat(alpha float64) int {
	return stats.RunsNeeded(1e-9, 1, alpha, PerfPower)
}

// Percent is a fraction written as a percentage with its sign: "5%", "12.5%".
type Percent float64

var percentRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?%$`)

// parsePercent parses "5%" as 0.05; the sign is required so that 5 and
// 0.05 are never confused.
func parsePercent(s string) (Percent, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if !percentRe.MatchString(s) || err != nil || v == 0 {
		return 0, fmt.Errorf("bad percentage %q: want a number above 0 with a %% sign, like 5%% or 12.5%%", s)
	}
	return Percent(v / 100), nil
}

// UnmarshalYAML parses "5%".
func (p *Percent) UnmarshalYAML(n *yaml.Node) error {
	v, err := parsePercent(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return typeError(n, "bad percentage %q: want a number above 0 with a %% sign, like 5%%", n.Value)
	}
	*p = v
	return nil
}

// MarshalYAML writes the percentage back as "5%".
func (p Percent) MarshalYAML() (any, error) { return p.String(), nil }

// String writes the value as a percentage, "12.5%".
func (p Percent) String() string {
	return strconv.FormatFloat(math.Round(float64(p)*1e6)/1e4, 'f', -1, 64) + "%"
}

// JSONSchema describes a percentage.
func (Percent) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Pattern: percentRe.String(),
		Description: "a percentage with its sign: 5%, 12.5%", Examples: []any{"5%", "12.5%"}}
}

// UnmarshalYAML records the line.
func (p *Perf) UnmarshalYAML(n *yaml.Node) error {
	type raw Perf
	p.Pos = Pos{Line: n.Line, Col: n.Column}
	if b := valueNode(n, "budgets"); b != nil {
		p.written = len(b.Content)
	}
	return n.Decode((*raw)(p))
}

// UnmarshalYAML records the line.
func (b *Budget) UnmarshalYAML(n *yaml.Node) error {
	type raw Budget
	b.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(b))
}

func (p *Perf) setDefaults() {
	if p.Baseline == "" {
		p.Baseline = BaselineBase
	}
	if p.Repeat == 0 {
		p.Repeat = DefaultRepeat
	}
	if p.MaxRepeat == 0 {
		p.MaxRepeat = 2 * p.Repeat
	}
	if p.Alpha == 0 {
		p.Alpha = DefaultAlpha
	}
}

// perf checks the perf block: a baseline, enough repeats for the rank test,
// a level, and budgets on figures the runner computes. A budget that even
// max_repeat runs cannot decide at its noise is a warning.
func (k *checker) perf() {
	p := k.s.Perf
	if p == nil {
		return
	}
	c := k.c
	if b := p.Baseline; b != BaselineBase && !strings.HasSuffix(b, ".yaml") {
		if err := names.Check(b); err != nil {
			c.add(p.Pos, "perf baseline %q: want base, a kernel spec (.yaml) or a stored baseline's name: %v", b, err)
		}
	}
	alphaOK := p.Alpha > 0 && p.Alpha < 1
	if !alphaOK {
		c.add(p.Pos, "perf alpha %g: want more than 0 and less than 1", p.Alpha)
	} else if floor := MinRepeat(p.Alpha); p.Repeat < floor {
		c.add(p.Pos, "perf repeat %d: the rank test cannot reach p < %g with fewer than %d runs per side", p.Repeat, p.Alpha, floor)
	}
	if p.MaxRepeat < p.Repeat {
		c.add(p.Pos, "perf max_repeat %d: want at least repeat (%d)", p.MaxRepeat, p.Repeat)
	}
	if p.written == 0 {
		c.add(p.Pos, "perf needs at least one budget under budgets:")
	}
	k.modes()
	for _, b := range p.Budgets {
		k.budget(b)
		if noise, _, written := b.noise(); !alphaOK || noise == 0 || b.bounds() != 1 {
			continue
		} else if n := b.RunsNeeded(p.Alpha); n > p.MaxRepeat {
			dir, tol := b.Tolerance()
			c.warn(b.Pos, "budget %s %s on %s is tighter than the noise allows: at %s %s it needs %d runs per side (%g%% power), max_repeat is %d",
				dir, tol, b.Metric, b.noiseKind("CV"), written, n, PerfPower*100, p.MaxRepeat)
		}
	}
}

// modes checks perf.modes: plain names, declared parameters, no two
// modes alike, and budgets that name modes that exist.
func (k *checker) modes() {
	p, c := k.s.Perf, k.c
	seen := map[string]string{}
	for _, name := range sortedKeys(p.Modes) {
		set := p.Modes[name]
		if err := names.Check(name); err != nil {
			c.add(p.Pos, "perf mode %q: %v", name, err)
		}
		if len(set) == 0 {
			c.add(p.Pos, "perf mode %s sets no parameter: want {param: value, ...}", name)
		}
		var key []string
		for _, param := range sortedKeys(set) {
			if _, ok := k.s.Values[param]; !ok {
				c.add(p.Pos, "perf mode %s: parameter %s is not declared under params:", name, param)
			}
			key = append(key, param+"="+set[param])
		}
		if other, ok := seen[strings.Join(key, ",")]; ok && len(set) > 0 {
			c.add(p.Pos, "perf modes %s and %s set the same values", other, name)
		}
		seen[strings.Join(key, ",")] = name
	}
	for _, b := range p.Budgets {
		for _, m := range b.Modes {
			if _, ok := p.Modes[m]; !ok {
				c.add(b.Pos, "budget on %s: modes: no perf mode %q (perf.modes has %s)", or(b.Metric, "?"), m, or(strings.Join(sortedKeys(p.Modes), ", "), "none"))
			}
		}
	}
}

func (k *checker) budget(b *Budget) {
	c := k.c
	if b.bounds() != 1 {
		c.add(b.Pos, "budget on %s needs exactly one of max_drop, max_rise and max_above (two budgets bound both directions)", or(b.Metric, "?"))
	}
	if b.MaxAbove < 0 {
		c.add(b.Pos, "budget max_above %g: want more than 0, in the figure's own units", b.MaxAbove)
	}
	if b.Spread < 0 {
		c.add(b.Pos, "budget spread %g: want more than 0, in the figure's own units", b.Spread)
	}
	if b.MaxAbove > 0 && b.Noise > 0 {
		c.add(b.Pos, "budget max_above on %s: its noise is spread: (a standard deviation in the figure's units), not noise: (a percentage)", or(b.Metric, "?"))
	}
	if b.MaxAbove == 0 && b.Spread > 0 {
		c.add(b.Pos, "budget spread on %s: only a max_above budget has a spread; max_drop and max_rise have noise: (a percentage)", or(b.Metric, "?"))
	}
	for _, t := range []struct {
		key string
		v   Percent
	}{{"max_drop", b.MaxDrop}, {"max_rise", b.MaxRise}} {
		if t.v >= 1 {
			c.add(b.Pos, "budget %s %v: want less than 100%%", t.key, t.v)
		}
	}
	if b.Metric == "" {
		c.add(b.Pos, "budget needs metric: (a figure name, as lab compare prints it)")
		return
	}
	if err := k.figure(b.Metric); err != "" {
		c.add(b.Pos, "budget metric %q: %s", b.Metric, err)
	}
}

// figure says why name is not a figure the runner computes for this
// scenario, or "".
func (k *checker) figure(name string) string {
	if m, ok := strings.CutSuffix(name, PerDatagramSuffix); ok && slices.Contains(PerDatagram, m) {
		return ""
	}
	for _, ln := range sortedKeys(k.s.Loads) {
		fig, ok := strings.CutPrefix(name, ln+".")
		if !ok {
			continue
		}
		switch {
		case contains(LoadFigures, fig):
			return ""
		case contains(LatencyFigures, fig) && k.s.Loads[ln].HasLatency():
			return ""
		case contains(LatencyFigures, fig):
			return fmt.Sprintf("load %s is not an rr load: only rr and xsk rr loads have %s", ln, strings.Join(LatencyFigures, ", "))
		}
	}
	m, err := metrics.Parse(strings.TrimSuffix(name, "/s"))
	if err == nil {
		if m.CPU >= k.s.Machine.CPUs {
			return fmt.Sprintf("the machine has %d cpus (cpu0 to cpu%d)", k.s.Machine.CPUs, k.s.Machine.CPUs-1)
		}
		if ns, ok := metrics.SourceNetns(m.Source); ok && !k.netns[ns] {
			return fmt.Sprintf("netns %q is not declared under topology.netns", ns)
		}
		return ""
	}
	if best := closest(name, k.figureNames()); best != "" {
		return fmt.Sprintf("not a figure the runner computes (did you mean %q?)", best)
	}
	return fmt.Sprintf("not a figure the runner computes: %v; or a load's %s", err, strings.Join(append(LoadFigures, LatencyFigures...), ", "))
}

// figureNames are the figures every run of the scenario has, for
// suggestions: the recorded metrics, their per-CPU forms on the machine's
// CPUs and the loads' figures.
func (k *checker) figureNames() []string {
	var names []string
	for _, m := range PerDatagram {
		names = append(names, m+PerDatagramSuffix)
	}
	names = append(names, FigureMetrics...)
	for cpu := 0; cpu < k.s.Machine.CPUs; cpu++ {
		for _, m := range PerCPUFigures {
			names = append(names, m+".cpu"+strconv.Itoa(cpu))
		}
	}
	for _, ln := range sortedKeys(k.s.Loads) {
		figs := LoadFigures
		if k.s.Loads[ln].HasLatency() {
			figs = append(figs, LatencyFigures...)
		}
		for _, f := range figs {
			names = append(names, ln+"."+f)
		}
	}
	for _, n := range names {
		if !strings.Contains(n, " ") && !strings.HasSuffix(n, "_pps") && !strings.HasSuffix(n, "_us") {
			names = append(names, n+"/s")
		}
	}
	return names
}

// closest returns the one name nearest to s, if it is near enough to be
// an obvious typo, or a load figure s ends like ("loads.udp.rx_pps").
func closest(s string, names []string) string {
	if best := suggest.Closest(s, names); best != "" {
		return best
	}
	for _, n := range names {
		if strings.HasSuffix(s, "."+n) {
			return n
		}
	}
	return ""
}

// valueNode returns the value of a mapping's key, or nil.
func valueNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; m != nil && m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// explainPerf prints the perf block: the baseline, repeats, level and every
// budget with its noise and the runs it needs.
func explainPerf(w io.Writer, p *Perf) {
	if p == nil {
		return
	}
	against := "stored baseline " + p.Baseline
	switch {
	case p.Baseline == BaselineBase:
		against = "base (the tested kernel's spec without its patches)"
	case strings.HasSuffix(p.Baseline, ".yaml"):
		against = "kernel spec " + p.Baseline
	}
	more := ""
	if p.MaxRepeat > p.Repeat {
		more = fmt.Sprintf(" (up to %d when a budget is undecided)", p.MaxRepeat)
	}
	fmt.Fprintf(w, "perf: against %s, %d runs per side%s, rank test at alpha %g; a budget FAILs when the change is beyond both the noise and its tolerance\n",
		against, p.Repeat, more, p.Alpha)
	if len(p.Modes) > 0 {
		var ms []string
		for _, name := range sortedKeys(p.Modes) {
			var kv []string
			for _, k := range sortedKeys(p.Modes[name]) {
				kv = append(kv, k+"="+p.Modes[name][k])
			}
			ms = append(ms, name+" ("+strings.Join(kv, ", ")+")")
		}
		fmt.Fprintf(w, "  modes: %s; lab run measures each the kernel's spec lists (modes:), all of them when it lists none, each its own verdict\n", strings.Join(ms, ", "))
	}
	for _, b := range p.Budgets {
		dir, tol := b.Tolerance()
		verb := map[string]string{"max_drop": "drops", "max_rise": "rises", "max_above": "rises above the baseline's median"}[dir]
		noise := "noise not measured"
		if n, _, written := b.noise(); n > 0 {
			noise = fmt.Sprintf("%s %s: needs %d runs per side at %g%% power", b.noiseKind("noise"), written, b.RunsNeeded(p.Alpha), PerfPower*100)
		}
		in := ""
		if len(b.Modes) > 0 {
			in = " in mode " + strings.Join(b.Modes, ", ")
		}
		fmt.Fprintf(w, "  - FAIL if %s %s by more than %s%s (%s) (line %d)\n", b.Metric, verb, tol, in, noise, b.Pos.Line)
	}
}
