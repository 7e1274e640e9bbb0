package scenarios

import (
	"fmt"
	"napilab/internal/names"
	"napilab/internal/safefs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// NewFile writes the text of a new scenario named name at path: the
// editor's schema modeline, the header every shipped scenario has, the
// fragments of the shipped scenarios folder it includes (nic, veth-peer;
// none gives a veth pair of its own), their loads started and stopped, and
// the assertions every scenario starts from. It lints clean as written.
func NewFile(path, name string, fragments []string) ([]byte, error) {
	if err := names.Check(name); err != nil {
		return nil, err
	}
	shipped := shippedDir(path)
	var b strings.Builder
	schema, err := filepath.Rel(filepath.Dir(absPath(path)), filepath.Join(absPath(shipped), "schema.json"))
	if err != nil || strings.HasPrefix(schema, "../../") { // outside the clone: where it is
		schema = filepath.Join(absPath(shipped), "schema.json")
	}
	fmt.Fprintf(&b, "# yaml-language-server: $schema=%s\n", schema)
	fmt.Fprintf(&b, `# %s
#
# Measures: <the kernel behaviour this checks: what runs, what must hold>
# Guards: <the upstream change or bug it would catch, and how it fails then>
name: %s
description: >
  <one paragraph for the report: the setup, the race or load, the outcome>

`, name, name)
	var loads []string
	if len(fragments) > 0 {
		var incs []string
		known := Fragments(shipped)
		for _, f := range fragments {
			f = strings.TrimSuffix(f, ".yaml")
			if !slices.Contains(known, f) { // a name, never a path
				return nil, fmt.Errorf("no fragment %q in %s (shipped fragments: %s)", f, filepath.Join(shipped, "fragments"), strings.Join(known, ", "))
			}
			rel := filepath.Join("fragments", f+".yaml")
			data, err := safefs.ReadRegular(filepath.Join(shipped, rel), MaxFileSize)
			if err != nil {
				return nil, fmt.Errorf("fragment %s: %w", f, err)
			}
			var frag struct {
				Loads map[string]yaml.Node `yaml:"loads"`
			}
			if err := yaml.Unmarshal(data, &frag); err != nil {
				return nil, fmt.Errorf("fragment %s: %w", f, err)
			}
			loads = append(loads, sortedKeys(frag.Loads)...)
			incs = append(incs, rel)
		}
		fmt.Fprintf(&b, "# Merged in: their topology, loads and parameters (lab scenario explain shows all).\ninclude: [%s]\n\n", strings.Join(incs, ", "))
	} else {
		loads = []string{"flood"}
		b.WriteString(`topology:
  netns: [peer]
  veths:
    - name: vrx
      address: 10.110.0.2/24
      gro: true           # veth has a NAPI only with GRO or XDP
      peer: {name: vtx, netns: peer, address: 10.110.0.1/24}

loads:
  flood:
    kind: udp
    from: {netns: peer}
    to: {address: 10.110.0.2, port: 9000}
    rate: 5000            # datagrams/s; 0 = as fast as it can

`)
	}
	slices.Sort(loads)
	loads = slices.Compact(loads)
	fmt.Fprintf(&b, `params:
  duration: 2s            # -p duration=10s on the command line

machine:
  cpus: 2

# Steps run in order; any step repeats with every: plus for: or count:.
timeline:
  - start: [%s]
  - name: load
    sleep: ${duration}
  - stop: [%s]

# What must hold; lab scenario metrics lists the metrics.
asserts:
  - no-splat: {}
  - name: datagrams arrive while the load runs
    during: {step: load}
    grows: {metric: snmp.Udp.InDatagrams, min: 100}
`, strings.Join(loads, ", "), strings.Join(loads, ", "))
	return []byte(b.String()), nil
}

// Fragments lists the shipped fragments by name (nic, veth-peer).
func Fragments(shipped string) []string {
	files, _ := filepath.Glob(filepath.Join(shipped, "fragments", "*.yaml"))
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	return out
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// WriteNew writes NewFile's text to path, which must not exist.
func WriteNew(path, name string, fragments []string) error {
	data, err := NewFile(path, name, fragments)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
