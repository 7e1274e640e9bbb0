package runner

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"

	"napilab/scenarios"
)

// knownFlakyFile is known-flaky.yaml beside this file: upstream selftests
// that fail on clean kernels because of the harness's timing, with reasons.
//
//go:embed known-flaky.yaml
var knownFlakyFile []byte

// knownFlakyName names the file in errors.
const knownFlakyName = "runner/known-flaky.yaml"

// knownFlaky is one entry of known-flaky.yaml.
type knownFlaky struct {
	Test    string   `yaml:"test"`
	Kernels []string `yaml:"kernels"` // spec names, or "all"
	Reason  string   `yaml:"reason"`
	Date    string   `yaml:"date"` // YYYY-MM-DD
	Retries int      `yaml:"retries"`
	line    int
}

var dateRe = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// parseKnownFlaky reads and checks a known-flaky list; errors name the line.
func parseKnownFlaky(name string, data []byte) ([]knownFlaky, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: want a list of entries", name, list.Line)
	}
	var out []knownFlaky
	var errs *multierror.Error
	for _, n := range list.Content {
		var k knownFlaky
		if err := n.Decode(&k); err != nil {
			errs = multierror.Append(errs, fmt.Errorf("%s:%d: %w", name, n.Line, err))
			continue
		}
		k.line = n.Line
		bad := func(f string, a ...any) {
			errs = multierror.Append(errs, fmt.Errorf("%s:%d: %s: %s", name, n.Line, k.Test, fmt.Sprintf(f, a...)))
		}
		switch {
		case !scenarios.ValidKselftest(k.Test):
			bad("bad test: want collection:test, e.g. net:veth.sh")
		case len(k.Kernels) == 0:
			bad("no kernels: want spec names or [all]")
		case k.Reason == "":
			bad("no reason: say why it is flaky and the evidence")
		case !dateRe.MatchString(k.Date):
			bad("bad date %q: want YYYY-MM-DD", k.Date)
		case k.Retries < 1:
			bad("retries %d: want at least 1", k.Retries)
		}
		out = append(out, k)
	}
	return out, errs.ErrorOrNil()
}

// mustKnownFlaky parses the shipped list; TestKnownFlakyFile keeps it valid.
func mustKnownFlaky() []knownFlaky {
	l, err := parseKnownFlaky(knownFlakyName, knownFlakyFile)
	if err != nil {
		panic(err)
	}
	return l
}

var shippedKnownFlaky = mustKnownFlaky()

// lookupKnownFlaky finds test on the kernel spec in list.
func lookupKnownFlaky(list []knownFlaky, test, spec string) (knownFlaky, bool) {
	for _, k := range list {
		if k.Test == test && (slices.Contains(k.Kernels, "all") || slices.Contains(k.Kernels, spec)) {
			return k, true
		}
	}
	return knownFlaky{}, false
}
