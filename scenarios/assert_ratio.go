package scenarios

import (
	"fmt"

	"napilab/results"
)

// Ratio checks delta(Num)/delta(Den) against Min and/or Max.
type Ratio struct {
	Num string   `yaml:"num"`
	Den string   `yaml:"den"`
	Min *float64 `yaml:"min"`
	Max *float64 `yaml:"max"`
}

func (x *Ratio) check(k *checker, a *Assert) {
	k.metric(a.Pos, x.Num)
	k.metric(a.Pos, x.Den)
	k.bounds(a.Pos, x.Min, x.Max)
}

func (x *Ratio) explain(a *Assert) string {
	return fmt.Sprintf("change of %s / change of %s %s: %s%s", x.Num, x.Den, span(a), bounds(x.Min, x.Max), each(a))
}

func (x *Ratio) name() string { return x.Num + " / " + x.Den }

func (x *Ratio) timingOnly() bool { return false }

func (x *Ratio) metrics() []string { return []string{x.Num, x.Den} }

func (x *Ratio) bounds() (min, max *float64) { return x.Min, x.Max }

func (x *Ratio) unit() string { return "" }

func (x *Ratio) context(string) (string, bool) { return "", true }

func (x *Ratio) measure(over Between, _ string, from, to float64) (float64, error) {
	num, _, err := over(x.Num, from, to)
	if err != nil {
		return 0, err
	}
	den, _, err := over(x.Den, from, to)
	if err == nil && den == 0 {
		err = fmt.Errorf("%s %w", x.Den, errNoChange)
	}
	return num / den, err
}

func (x *Ratio) eval(_ *Scenario, rec Record, a *Assert) results.Assert {
	r := a.result(x)
	r.Bound = bound(x.Min, x.Max)
	num, _, err := rec.Delta(x.Num)
	if err == nil {
		var den float64
		if den, _, err = rec.Delta(x.Den); err == nil && den == 0 {
			err = fmt.Errorf("%s did not change", x.Den)
		}
		if err == nil {
			v := num / den
			r.Measured = fmt.Sprintf("%.4g (%g / %g)", v, num, den)
			r.Passed = within(v, x.Min, x.Max)
			return r
		}
	}
	r.Measured, r.Unmeasured = err.Error(), IsUnmeasured(err)
	return r
}
