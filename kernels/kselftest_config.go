package kernels

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// kselftestConfig is merged after the collections' own fragments: the
// userspace and net features they assume of a distribution kernel, and the
// tests that would run at boot when built in turned off.
//
//go:embed configs/kselftest.config
var kselftestConfig []byte

// kselftestConfigName names the embedded fragment in errors and notes.
const kselftestConfigName = "kernels/configs/kselftest.config"

// kselftestSuffix joins a spec's name and its collections in a flavour's name.
const kselftestSuffix = ".kselftest-"

var collectionRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9_-]*)*$`)

// ValidCollection reports whether c can name a kselftest collection, a folder
// under tools/testing/selftests such as "net" or "drivers/net".
func ValidCollection(c string) bool { return collectionRe.MatchString(c) }

// WithSelftests returns a copy of spec that also merges the config fragments
// of the kselftest collections, named "<spec>.kselftest-<c>[-<c>...]". A
// variant's kselftest flavour builds on its base's kselftest flavour
// (planReuse), as its debug flavour does on the base's debug flavour: the
// same config, so only what the variant's patches feed recompiles. (On the
// plain base's build it would recompile nearly everything: the collections'
// config changes headers almost every file includes.)
func (s *Spec) WithSelftests(collections []string) *Spec {
	cs := append(append([]string{}, s.Config.Selftests...), collections...)
	slices.Sort(cs)
	cs = slices.Compact(cs)
	out := *s
	out.Config.Fragments = slices.Clone(s.Config.Fragments)
	out.Config.Selftests = cs
	out.Patches = slices.Clone(s.Patches)
	if len(cs) > 0 && len(s.Config.Selftests) == 0 {
		words := make([]string, len(cs))
		for i, c := range cs {
			words[i] = strings.ReplaceAll(c, "/", "_")
		}
		out.Name = s.Name + kselftestSuffix + strings.Join(words, "-")
	}
	return &out
}

// selftestFragments reads the collections' config fragments from the source
// tree (advisory), then the lab's kselftest.config (required).
func selftestFragments(src string, collections []string) ([]Fragment, error) {
	if len(collections) == 0 {
		return nil, nil
	}
	var frags []Fragment
	for _, c := range collections {
		path := filepath.Join(src, "tools", "testing", "selftests", c, "config")
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			if _, derr := os.Stat(filepath.Dir(path)); derr != nil {
				return nil, fmt.Errorf("kselftest collection %q: no folder tools/testing/selftests/%s in this source", c, c)
			}
			continue // a collection without a config fragment needs nothing
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read kselftest config: %w", err)
		}
		frag, err := ParseFragment("tools/testing/selftests/"+c+"/config", data)
		if err != nil {
			return nil, err
		}
		frag.Advisory = true
		builtIn(&frag)
		frags = append(frags, frag)
	}
	lab, err := ParseFragment(kselftestConfigName, kselftestConfig)
	if err != nil {
		return nil, err
	}
	return append(frags, lab), nil
}

// builtIn turns a fragment's module requests (=m) into built-ins: lab guests
// boot an initramfs without modules, and MODULES=y (trace.config) would
// otherwise leave a requested feature out of the image.
func builtIn(frag *Fragment) {
	for i, s := range frag.Settings {
		if s.Value == "m" {
			frag.Settings[i].Value = "y"
		}
	}
}
