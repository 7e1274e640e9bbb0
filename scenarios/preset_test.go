package scenarios

import (
	"strings"
	"testing"
	"time"
)

const presetSrc = `name: p
params: {column: fast, d: 1s, n: "1"}
presets:
  column:
    fast: {d: 2s}
    slow: {d: 5s, n: "3"}
timeline:
  - sleep: ${d}
  - sleep: ${n}s
`

func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		params   map[string]string
		d, n     time.Duration
		chosen   string
		errMatch string
	}{
		{name: "default choice fills", d: 2 * time.Second, n: time.Second, chosen: "column=fast"},
		{name: "chosen by -p", params: map[string]string{"column": "slow"}, d: 5 * time.Second, n: 3 * time.Second,
			chosen: "column=slow"},
		{name: "user value wins", params: map[string]string{"column": "slow", "d": "7s"}, d: 7 * time.Second,
			n: 3 * time.Second, chosen: "column=slow"},
		{name: "unknown choice", params: map[string]string{"column": "medium"},
			errMatch: "x.yaml: column=medium is not one of its presets: fast, slow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("x.yaml", []byte(presetSrc), tc.params)
			if tc.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errMatch) {
					t.Fatalf("error = %v, want %q", err, tc.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d, n := s.Timeline[0].Sleep.D(), s.Timeline[1].Sleep.D(); d != tc.d || n != tc.n {
				t.Errorf("sleeps %v %v, want %v %v", d, n, tc.d, tc.n)
			}
			if strings.Join(s.Chosen, " ") != tc.chosen {
				t.Errorf("chosen %v, want %s", s.Chosen, tc.chosen)
			}
		})
	}
}

func TestPresetErrors(t *testing.T) {
	for _, tc := range []struct {
		name, presets, want string
	}{
		{"undeclared target", "  column:\n    fast: {z: 1}\n", "presets.column.fast: parameter z is not declared"},
		{"undeclared preset param", "  mode:\n    a: {d: 1s}\n", "presets.mode: mode is not declared"},
		{"chained presets", "  column:\n    fast: {n: \"2\"}\n  n:\n    \"1\": {d: 1s}\n    \"2\": {d: 2s}\n",
			"presets.column.fast: n has presets of its own"},
		{"bad shape", "  column: [a, b]\n", "x.yaml:4: presets: want param: {value: {param: value}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: p\nparams: {column: fast, d: 1s, n: \"1\"}\npresets:\n" + tc.presets +
				"timeline:\n  - sleep: ${d}\n  - sleep: ${n}s\n"
			_, err := Parse("x.yaml", []byte(src), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}
