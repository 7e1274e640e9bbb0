package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"

	"napilab/kernels"
)

// treeOptions are the flags that make an ad-hoc spec from a local tree.
type treeOptions struct {
	dir        string // --tree
	rev        string // --rev: build this revision of the repository instead of the tree as it is
	name       string // --name
	configFrom string // --config-from: the spec whose config (fragments, cmdline) is used
}

// addTreeFlags adds --tree, --rev, --name and --config-from to cmd.
func addTreeFlags(cmd *cobra.Command, o *treeOptions) {
	cmd.Flags().StringVar(&o.dir, "tree", "", "build this kernel tree (as it is on disk, uncommitted and untracked files too) instead of a spec")
	cmd.Flags().StringVar(&o.rev, "rev", "", "with --tree: build this revision of the git repository instead")
	cmd.Flags().StringVar(&o.name, "name", "", "with --tree: the kernel's name (default tree-<folder>[-<rev>])")
	cmd.Flags().StringVar(&o.configFrom, "config-from", "", "with --tree: take config and cmdline from this spec (default: the kernels/stock-X.Y.yaml nearest below the tree's release)")
}

// set reports whether --tree was given; the other tree flags need it.
func (o *treeOptions) set() (bool, error) {
	if o.dir == "" && (o.rev != "" || o.name != "" || o.configFrom != "") {
		return false, fmt.Errorf("--rev, --name and --config-from need --tree")
	}
	return o.dir != "", nil
}

// specPath writes the ad-hoc spec for the tree into the cache (see
// kernels.WriteTreeSpec) and returns its path.
func (o *treeOptions) specPath(ctx context.Context, g *globalOptions) (string, error) {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return "", err
	}
	tmplPath := o.configFrom
	if tmplPath == "" {
		base := kernels.Base{Tree: dir}
		if o.rev != "" {
			base = kernels.Base{Git: dir, Rev: o.rev}
		}
		release, err := kernels.TreeRelease(ctx, g.cache(), base)
		if err != nil {
			return "", err
		}
		if tmplPath, err = stockFor(release); err != nil {
			return "", err
		}
	}
	tmpl, err := kernels.LoadSpec(tmplPath)
	if err != nil {
		return "", err
	}
	name := o.name
	if name == "" {
		name = kernels.TreeSpecName(dir, o.rev)
	}
	return kernels.WriteTreeSpec(g.cache(), name, dir, o.rev, tmpl)
}

// stockSpecRe reads the release of a stock spec's file name.
var stockSpecRe = regexp.MustCompile(`^stock-(\d+)\.(\d+)\.yaml$`)

// stockGlob is where stockFor looks.
const stockGlob = "kernels/stock-*.yaml"

// stockFor picks the stock spec whose config suits a tree of the given
// release: the newest at or below it, else the oldest (the lab's fragments
// follow what moved between releases, e.g. configs/7.3.config).
func stockFor(release string) (string, error) {
	paths, _ := filepath.Glob(stockGlob)
	want := releaseNumber(release)
	best, bestN, oldest, oldestN := "", -1, "", 1<<30
	for _, p := range paths {
		m := stockSpecRe.FindStringSubmatch(filepath.Base(p))
		if m == nil {
			continue
		}
		n := releaseNumber(m[1] + "." + m[2])
		if n <= want && n > bestN {
			best, bestN = p, n
		}
		if n < oldestN {
			oldest, oldestN = p, n
		}
	}
	switch {
	case best != "":
		return best, nil
	case oldest != "":
		return oldest, nil
	}
	return "", fmt.Errorf("no %s here to take the config from: run lab from the napilab checkout or pass --config-from", stockGlob)
}

// releaseRe reads major and minor of a release.
var releaseRe = regexp.MustCompile(`^(\d+)\.(\d+)`)

// releaseNumber orders releases by major and minor; 0 when unknown.
func releaseNumber(release string) int {
	m := releaseRe.FindStringSubmatch(release)
	if m == nil {
		return 0
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major*1000 + minor
}
