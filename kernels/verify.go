package kernels

import (
	"fmt"
	"strings"
)

// ConfigMismatch is one fragment setting that the final .config does not honour.
type ConfigMismatch struct {
	// Symbol is the symbol name, e.g. CONFIG_BPF_JIT.
	Symbol string
	// Want is the requested value ("n" for not set).
	Want string
	// Got is the final value: "n" for not set, "" when the symbol is absent.
	Got string
	// Fragment names the fragment that requested the value.
	Fragment string
	// Line is the line of the request in Fragment.
	Line int
}

// String renders the mismatch as "CONFIG_X: want y, got not set (fragment f:3)".
func (m ConfigMismatch) String() string {
	return fmt.Sprintf("%s: want %s, got %s (fragment %s:%d)",
		m.Symbol, describeValue(m.Want), describeValue(m.Got), m.Fragment, m.Line)
}

// ConfigMismatchError reports fragment settings lost by olddefconfig, usually
// through unmet dependencies; it is a spec fault.
type ConfigMismatchError struct {
	// Mismatches lists every lost setting, in fragment order.
	Mismatches []ConfigMismatch
	// Config is the path of the final .config, kept for inspection (may be empty).
	Config string
}

// Error lists every mismatched symbol, one per line.
func (e *ConfigMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d config fragment settings did not survive olddefconfig", len(e.Mismatches))
	if e.Config != "" {
		fmt.Fprintf(&b, " (see %s)", e.Config)
	}
	b.WriteString(":")
	for _, m := range e.Mismatches {
		b.WriteString("\n\t" + m.String())
	}
	return b.String()
}

// VerifyConfig checks that every setting requested by the fragments (the
// last request per symbol wins) holds in the final .config. A request for
// "m" is met by "y" in a kernel without modules. Settings lost from advisory
// fragments are returned, not treated as errors.
func VerifyConfig(final []byte, fragments []Fragment) ([]ConfigMismatch, error) {
	type request struct {
		setting  Setting
		fragment string
		advisory bool
	}
	requests := make(map[string]request)
	var order []string
	for _, frag := range fragments {
		for _, s := range frag.Settings {
			if _, seen := requests[s.Symbol]; !seen {
				order = append(order, s.Symbol)
			}
			requests[s.Symbol] = request{s, frag.Name, frag.Advisory}
		}
	}
	got := parseDotconfig(final)
	modules := got["CONFIG_MODULES"] == "y"
	var mismatches, unmet []ConfigMismatch
	for _, sym := range order {
		req := requests[sym]
		val, present := got[sym]
		want := req.setting.Value
		if val == want || (!present && want == notSet) || (want == "m" && val == "y" && !modules) {
			continue
		}
		m := ConfigMismatch{Symbol: sym, Want: want, Got: val, Fragment: req.fragment, Line: req.setting.Line}
		if req.advisory {
			unmet = append(unmet, m)
		} else {
			mismatches = append(mismatches, m)
		}
	}
	if len(mismatches) > 0 {
		return unmet, &ConfigMismatchError{Mismatches: mismatches}
	}
	return unmet, nil
}

// describeValue renders a config value for humans.
func describeValue(v string) string {
	switch v {
	case notSet:
		return "not set"
	case "":
		return "absent"
	}
	return v
}
