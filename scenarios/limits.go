package scenarios

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Limits on what a scenario expands to. A scenario file is written by
// others: YAML aliases, includes and parameters can make a small file stand
// for a huge one (8 levels of aliased parallel: steps, 8 branches each, are
// 16.7M steps in 600 bytes). Parse measures the expanded document first and
// refuses one over a limit with its file:line:col, before anything walks it.
const (
	// MaxSteps bounds the timeline's steps, parallel branches included,
	// once aliases, includes and parameters (presets included) are
	// expanded. The biggest shipped scenario has 21. A repeated step
	// (every:) counts once: nothing expands its repetitions, the runner
	// loops over them.
	MaxSteps = 10000
	// MaxDepth bounds how deeply YAML nodes nest (a parallel: inside a
	// step is two levels); the shipped scenarios reach 8.
	MaxDepth = 40
	// MaxAliasNodes bounds the YAML nodes reached through aliases, counted
	// each time an alias is followed (an alias of an alias multiplies).
	MaxAliasNodes = 100000
	// MaxAliasBytes bounds the scalar text reached through aliases, counted
	// the same way: every error message may quote it.
	MaxAliasBytes = 4 * MaxFileSize
	// MaxExpandedSize bounds a file once its parameters are substituted.
	MaxExpandedSize = 4 * MaxFileSize
)

// expansion measures a document with its aliases followed.
type expansion struct {
	c          *collector
	aliasNodes int
	aliasBytes int
	refused    bool
}

// checkExpansion refuses a document (after includes are merged) over the
// limits: too deep, too much reached through aliases, too many steps. It
// stops at the first limit crossed, so it costs at most the limits.
func checkExpansion(root *yaml.Node, c *collector) bool {
	x := &expansion{c: c}
	x.walk(root, nil, 1)
	if !x.refused {
		x.steps(root)
	}
	return !x.refused
}

// refuse reports a crossed limit at the alias that led there (where the
// user wrote the reference), else at the node.
func (x *expansion) refuse(n, via *yaml.Node, format string, args ...any) {
	if via != nil {
		n = via
	}
	x.c.at(n.Line, n.Column, format, args...)
	x.refused = true
}

// walk visits n and below; via is the outermost alias on the way, if any.
func (x *expansion) walk(n, via *yaml.Node, depth int) {
	if x.refused {
		return
	}
	if depth > MaxDepth {
		x.refuse(n, via, "nested more than %d levels deep (the limit)", MaxDepth)
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		if via == nil {
			via = n
		}
		n = n.Alias
	}
	if via != nil {
		x.aliasNodes++
		x.aliasBytes += len(n.Value)
		if x.aliasNodes > MaxAliasNodes {
			x.refuse(n, via, "aliases expand to more than %d nodes (the limit)", MaxAliasNodes)
			return
		}
		if x.aliasBytes > MaxAliasBytes {
			x.refuse(n, via, "aliases expand to more than %d bytes of text (the limit)", MaxAliasBytes)
			return
		}
	}
	for _, ch := range n.Content {
		x.walk(ch, via, depth+1)
	}
}

// steps counts the timeline's steps and their parallel branches. It runs
// after walk passed, so the expanded document is bounded.
func (x *expansion) steps(root *yaml.Node) {
	count := 0
	var seq func(list, via *yaml.Node)
	seq = func(list, via *yaml.Node) {
		list, via = follow(list, via)
		if list.Kind != yaml.SequenceNode {
			return
		}
		for _, item := range list.Content {
			if x.refused {
				return
			}
			st, at := follow(item, via)
			count++
			if count > MaxSteps {
				x.refuse(item, at, "the timeline has more than %d steps once aliases, includes, parameters and parallel branches are expanded (the limit)", MaxSteps)
				return
			}
			if p := valueNode(st, "parallel"); p != nil {
				seq(p, at)
			}
		}
	}
	if t := valueNode(root, "timeline"); t != nil {
		seq(t, nil)
	}
}

// follow resolves an alias, keeping the outermost alias seen.
func follow(n, via *yaml.Node) (*yaml.Node, *yaml.Node) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		if via == nil {
			via = n
		}
		return n.Alias, via
	}
	return n, via
}

// errTooLarge is the message of a file over MaxExpandedSize.
func errTooLarge(name string) error {
	return fmt.Errorf("%s: over %d bytes once parameters are substituted (the limit)", name, MaxExpandedSize)
}
