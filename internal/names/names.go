// Package names holds the rule for the names of scenarios, kernel specs
// and baselines: they become folder names under the lab's own folders.
package names

import (
	"fmt"
	"regexp"
)

// MaxLen bounds a scenario or kernel spec name: it becomes part of a
// folder name.
const MaxLen = 100

var re = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Check is the rule for the names of scenarios and kernel specs, which
// name run folders and cache folders: a letter or digit, then letters,
// digits, '.', '_' or '-', at most MaxLen in all.
func Check(name string) error {
	if !re.MatchString(name) || len(name) > MaxLen {
		return fmt.Errorf("bad name %q, want [A-Za-z0-9][A-Za-z0-9._-]* (at most %d characters)", name, MaxLen)
	}
	return nil
}
