package scenarios

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"napilab/results"
)

// NoSplat fails on any kernel splat not in Allow.
type NoSplat struct {
	Allow []Allow `yaml:"allow"`
}

// Allow lets splats whose title matches a regexp pass, with a reason.
type Allow struct {
	Title  string `yaml:"title"`
	Reason string `yaml:"reason"`
}

func (x *NoSplat) check(k *checker, a *Assert) {
	for _, al := range x.Allow {
		if _, err := regexp.Compile(al.Title); err != nil || al.Title == "" {
			k.c.add(a.Pos, "allow title %q: want a regexp", al.Title)
		}
		if al.Reason == "" {
			k.c.add(a.Pos, "allow %q needs a reason", al.Title)
		}
	}
}

func (x *NoSplat) explain(*Assert) string {
	if len(x.Allow) == 0 {
		return "no kernel splat on the console (always, without no-splat: too)"
	}
	var allow []string
	for _, al := range x.Allow {
		allow = append(allow, fmt.Sprintf("%q (%s)", al.Title, al.Reason))
	}
	sort.Strings(allow)
	return "no splat except " + strings.Join(allow, ", ")
}

func (x *NoSplat) name() string { return "no kernel splat" }

func (x *NoSplat) timingOnly() bool { return false }

func (x *NoSplat) metrics() []string { return nil }

// eval: the runner judges splats from the guest's console, all no-splat
// assertions together; a record holds no console.
func (x *NoSplat) eval(_ *Scenario, _ Record, a *Assert) results.Assert {
	r := a.result(x)
	r.Measured, r.Bound, r.Unmeasured = "not in the record", "0 splats", true
	return r
}
