package kernels

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// Fragment is a parsed Kconfig fragment: the settings it requests, in file order.
type Fragment struct {
	// Name identifies the fragment in errors, usually its path.
	Name string
	// Settings are the fragment's assignments in file order.
	Settings []Setting
	// Advisory fragments (a kselftest collection's config) may lose settings
	// to olddefconfig: VerifyConfig reports those instead of failing.
	Advisory bool
}

// Setting is one symbol assignment requested by a fragment.
type Setting struct {
	// Symbol is the full symbol name, e.g. CONFIG_BPF_JIT.
	Symbol string
	// Value is the raw value; "n" stands for "# CONFIG_X is not set".
	Value string
	// Line is the 1-based line of the assignment in the fragment.
	Line int
}

// notSet is the value of a symbol written as "# CONFIG_X is not set".
const notSet = "n"

// ParseFragment parses a fragment of `CONFIG_X=val` and `# CONFIG_X is not set` lines.
func ParseFragment(name string, data []byte) (Fragment, error) {
	frag := Fragment{Name: name}
	var errs *multierror.Error
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if sym, val, ok := parseConfigLine(line); ok {
			frag.Settings = append(frag.Settings, Setting{Symbol: sym, Value: val, Line: i + 1})
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		errs = multierror.Append(errs, &SpecError{Path: name, Line: i + 1,
			Msg: fmt.Sprintf("malformed config line %q, want CONFIG_X=val or # CONFIG_X is not set", line)})
	}
	if err := flatten(errs); err != nil {
		return Fragment{}, err
	}
	return frag, nil
}

// MergeConfig applies the fragments to a .config in order, the way
// scripts/kconfig/merge_config.sh does: each fragment's symbols are deleted
// from the text merged so far and its settings appended at the end. Appending
// matters for choices: Kconfig keeps the last "=y" of a choice group, so an
// in-place edit of "# CONFIG_SLUB is not set" would lose to a later
// "CONFIG_SLOB=y". Other lines are kept as they are.
func MergeConfig(dotconfig []byte, fragments []Fragment) []byte {
	text := strings.TrimSuffix(string(dotconfig), "\n")
	var lines []string
	if text != "" {
		lines = strings.Split(text, "\n")
	}
	for _, frag := range fragments {
		drop := make(map[string]bool)
		last := make(map[string]int)
		for i, s := range frag.Settings {
			drop[s.Symbol] = true
			last[s.Symbol] = i
		}
		kept := lines[:0]
		for _, line := range lines {
			if sym, _, ok := parseConfigLine(line); !ok || !drop[sym] {
				kept = append(kept, line)
			}
		}
		lines = kept
		for i, s := range frag.Settings {
			if last[s.Symbol] == i {
				lines = append(lines, formatSetting(s.Symbol, s.Value))
			}
		}
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// parseDotconfig maps each symbol of a .config to its value ("n" when not set).
func parseDotconfig(data []byte) map[string]string {
	vals := make(map[string]string)
	for _, line := range strings.Split(string(data), "\n") {
		if sym, val, ok := parseConfigLine(line); ok {
			vals[sym] = val
		}
	}
	return vals
}

// parseConfigLine parses `CONFIG_X=val` or `# CONFIG_X is not set`.
func parseConfigLine(line string) (sym, val string, ok bool) {
	line = strings.TrimSpace(line)
	if rest, found := strings.CutPrefix(line, "# "); found {
		sym, found = strings.CutSuffix(rest, " is not set")
		if found && validSymbol(sym) {
			return sym, notSet, true
		}
		return "", "", false
	}
	sym, val, found := strings.Cut(line, "=")
	if !found || !validSymbol(sym) {
		return "", "", false
	}
	return sym, strings.TrimSpace(val), true
}

// validSymbol reports whether s looks like CONFIG_[A-Za-z0-9_]+.
func validSymbol(s string) bool {
	rest, ok := strings.CutPrefix(s, "CONFIG_")
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// formatSetting renders a setting the way Kconfig writes it.
func formatSetting(sym, val string) string {
	if val == notSet {
		return "# " + sym + " is not set"
	}
	return sym + "=" + val
}
