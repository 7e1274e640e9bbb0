package kernels

import (
	"fmt"
	"napilab/internal/names"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Ad-hoc specs (lab --tree DIR [--rev REV]) are written as spec files into
// <cache>/specs/<name>.yaml, so that everything keyed on a spec path (lab
// run, replay.json, lab repro, kernel list and gc) treats them like any
// other. Their config (base target, fragments, cmdline) is a template
// spec's, with absolute fragment paths.

// SpecsDir is where ad-hoc specs are written under a cache root.
func SpecsDir(cacheDir string) string { return filepath.Join(cacheDir, "specs") }

// adhocFile is the YAML of an ad-hoc spec.
type adhocFile struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Base        struct {
		Tree string `yaml:"tree,omitempty"`
		Git  string `yaml:"git,omitempty"`
		Rev  string `yaml:"rev,omitempty"`
	} `yaml:"base"`
	Config struct {
		Base      string   `yaml:"base"`
		Fragments []string `yaml:"fragments"`
		Selftests []string `yaml:"selftests,omitempty"`
	} `yaml:"config"`
	Cmdline []string `yaml:"cmdline,omitempty"`
}

// WriteTreeSpec writes the ad-hoc spec building dir (at rev when rev is
// set, else the tree as it is on disk) with template's config, and returns
// its path. Fragment paths are made absolute.
func WriteTreeSpec(cacheDir, name, dir, rev string, template *Spec) (string, error) {
	if err := names.Check(name); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("failed to resolve %s: %w", dir, err)
	}
	var f adhocFile
	f.Name = name
	if rev != "" {
		f.Base.Git, f.Base.Rev = abs, rev
		f.Description = fmt.Sprintf("%s at %s (lab --tree), config of %s", abs, rev, template.Name)
	} else {
		f.Base.Tree = abs
		f.Description = fmt.Sprintf("%s as it is on disk (lab --tree), config of %s", abs, template.Name)
	}
	f.Config.Base = template.Config.Base
	for _, frag := range template.Config.Fragments {
		p, err := filepath.Abs(frag)
		if err != nil {
			return "", fmt.Errorf("failed to resolve %s: %w", frag, err)
		}
		f.Config.Fragments = append(f.Config.Fragments, p)
	}
	f.Config.Selftests = template.Config.Selftests
	f.Cmdline = template.Cmdline
	data, err := yaml.Marshal(&f)
	if err != nil {
		return "", fmt.Errorf("failed to encode spec %s: %w", name, err)
	}
	path := filepath.Join(SpecsDir(cacheDir), name+".yaml")
	if err := writeFileAtomic(path, data); err != nil {
		return "", err
	}
	return path, nil
}

// nameJunkRe matches what a spec name may not hold.
var nameJunkRe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// TreeSpecName is the default name of an ad-hoc spec: "tree-<folder>",
// plus "-<rev>" for a revision.
func TreeSpecName(dir, rev string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	name := "tree-" + filepath.Base(abs)
	if rev != "" {
		name += "-" + rev
	}
	name = strings.Trim(nameJunkRe.ReplaceAllString(name, "-"), "-.")
	return name[:min(len(name), names.MaxLen)]
}
