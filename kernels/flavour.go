package kernels

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

// debugConfig is merged last in the debug flavour: KASAN, lockdep, UBSAN,
// kmemleak and the list, object and refcount checkers.
//
//go:embed configs/sanitizers.config
var debugConfig []byte

// debugConfigName names the embedded fragment in errors.
const debugConfigName = "kernels/configs/sanitizers.config"

// debugSuffix ends the debug flavour's name ("stock-6.1.debug").
const debugSuffix = ".debug"

// Flavour names the builds of one spec a run can ask for.
type Flavour struct {
	// Debug merges the sanitizers (see WithDebug).
	Debug bool
	// Selftests names kselftest collections whose config is merged.
	Selftests []string
}

// Flavour names the lab's flavours in ParseFlavour's words.
const (
	FlavourDebug     = "debug"
	FlavourKselftest = "kselftest"
)

// ParseFlavour reads a comma-separated list such as "debug,kselftest";
// "kselftest" stands for the net collection, "kselftest-<c>" for another.
func ParseFlavour(s string) (Flavour, error) {
	var f Flavour
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		switch {
		case w == "":
		case w == FlavourDebug:
			f.Debug = true
		case w == FlavourKselftest:
			f.Selftests = append(f.Selftests, "net")
		case strings.HasPrefix(w, FlavourKselftest+"-") && ValidCollection(strings.TrimPrefix(w, FlavourKselftest+"-")):
			f.Selftests = append(f.Selftests, strings.TrimPrefix(w, FlavourKselftest+"-"))
		default:
			return Flavour{}, fmt.Errorf("unknown flavour %q, want debug, kselftest or kselftest-<collection>", w)
		}
	}
	return f, nil
}

// Join returns the flavour with o's added.
func (f Flavour) Join(o Flavour) Flavour {
	cs := append(slices.Clone(f.Selftests), o.Selftests...)
	slices.Sort(cs)
	return Flavour{Debug: f.Debug || o.Debug, Selftests: slices.Compact(cs)}
}

// String is the flavour in ParseFlavour's words ("" for the plain build).
func (f Flavour) String() string {
	var ws []string
	if f.Debug {
		ws = append(ws, FlavourDebug)
	}
	for _, c := range f.Selftests {
		ws = append(ws, FlavourKselftest+"-"+c)
	}
	return strings.Join(ws, ",")
}

// Flavour is the flavour spec was made as.
func (s *Spec) Flavour() Flavour {
	return Flavour{Debug: s.Config.Debug, Selftests: s.Config.Selftests}
}

// Flavoured returns spec built as f: debug first, then the selftests, so
// names read "stock-6.1.debug.kselftest-net".
func (s *Spec) Flavoured(f Flavour) *Spec {
	out := s
	if f.Debug {
		out = out.WithDebug()
	}
	if len(f.Selftests) > 0 {
		out = out.WithSelftests(f.Selftests)
	}
	return out
}

// WithDebug returns a copy of spec that also merges the sanitizers, named
// "<spec>.debug". A variant's debug flavour builds on its base's debug
// flavour (planReuse), as the plain variant builds on the plain base.
func (s *Spec) WithDebug() *Spec {
	if s.Config.Debug {
		return s
	}
	out := *s
	out.Config.Fragments = slices.Clone(s.Config.Fragments)
	out.Config.Selftests = slices.Clone(s.Config.Selftests)
	out.Patches = slices.Clone(s.Patches)
	out.Config.Debug = true
	out.Name = s.Name + debugSuffix
	return &out
}

// debugFragments returns the sanitizers fragment when debug is set.
func debugFragments(debug bool) ([]Fragment, error) {
	if !debug {
		return nil, nil
	}
	frag, err := ParseFragment(debugConfigName, debugConfig)
	if err != nil {
		return nil, err
	}
	return []Fragment{frag}, nil
}

// specOf returns the spec name a flavour's name was made from
// ("stock-6.1.debug.kselftest-net" → "stock-6.1").
func specOf(name string) string {
	name, _, _ = strings.Cut(name, kselftestSuffix)
	return strings.TrimSuffix(name, debugSuffix)
}
