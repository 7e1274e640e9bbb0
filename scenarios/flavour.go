package scenarios

import (
	"maps"

	"gopkg.in/yaml.v3"
)

// FlavourParams are parameter values for runs on one kernel flavour, such as
// the debug flavour's lower offered rates: its sanitizers make the guest
// several times slower under TCG, and a rate the plain kernel absorbs keeps a
// debug kernel's NAPI polling forever. The reason says what was measured.
type FlavourParams struct {
	Reason string            `yaml:"reason"`
	Params map[string]string `yaml:"params"`
	// Skip says the scenario cannot check what it checks on the flavour
	// (the reason says why); lab run prints SKIP instead of booting.
	Skip bool `yaml:"skip"`
	Pos  Pos  `yaml:"-"`
}

// SkippedOn returns why the scenario does not run on the flavour, or "".
func (s *Scenario) SkippedOn(flavour string) string {
	if f := s.Flavours[flavour]; f.Skip {
		return "not on the " + flavour + " flavour: " + f.Reason
	}
	return ""
}

// UnmarshalYAML records the line.
func (f *FlavourParams) UnmarshalYAML(n *yaml.Node) error {
	type raw FlavourParams
	f.Pos = Pos{Line: n.Line, Col: n.Column}
	return n.Decode((*raw)(f))
}

// ForFlavour returns the scenario opened again with the flavour's parameter
// values under the given overrides (which win), and those parameters; s and
// params themselves when the flavour sets none.
func (s *Scenario) ForFlavour(flavour string, params map[string]string) (*Scenario, map[string]string, error) {
	fp := s.Flavours[flavour].Params
	if len(fp) == 0 {
		return s, params, nil
	}
	merged := maps.Clone(fp)
	maps.Copy(merged, params)
	out, err := Open(s.Path, merged)
	return out, merged, err
}

// flavours checks flavours: a known flavour, a reason, declared parameters.
func (k *checker) flavours(declared map[string]string) {
	for name, f := range k.s.Flavours {
		if name != FlavourDebug {
			k.c.add(f.Pos, "flavours: unknown flavour %q, want %s", name, FlavourDebug)
		}
		if f.Reason == "" {
			k.c.add(f.Pos, "flavours.%s needs a reason: what was measured on that flavour", name)
		}
		for _, p := range sortedKeys(f.Params) {
			if _, ok := declared[p]; !ok {
				k.c.add(f.Pos, "flavours.%s: parameter %s is not declared under params:", name, p)
			}
		}
	}
}
