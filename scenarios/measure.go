package scenarios

import (
	"crypto/sha256"
	"encoding/hex"

	"gopkg.in/yaml.v3"
)

// measureKeys are the top-level keys a run's samples do not depend on.
var measureKeys = []string{"perf", "name", "description"}

// measureHash returns the hex SHA-256 of the resolved scenario without
// measureKeys and comments, in one canonical style: what a stored
// baseline's samples depend on.
func measureHash(root *yaml.Node) string {
	bare := plain(root)
	var kept []*yaml.Node
	for i := 0; i+1 < len(bare.Content); i += 2 {
		if !contains(measureKeys, bare.Content[i].Value) {
			kept = append(kept, bare.Content[i], bare.Content[i+1])
		}
	}
	bare.Content = kept
	b, err := yaml.Marshal(bare)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// plain copies a node without comments, positions and flow or quoting
// styles (the encoder quotes what must stay a string).
func plain(n *yaml.Node) *yaml.Node {
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Anchor: n.Anchor, Alias: n.Alias}
	for _, ch := range n.Content {
		c.Content = append(c.Content, plain(ch))
	}
	return c
}
