package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openBounded opens a scenario in a goroutine and fails the test if it has
// not returned after a minute: a hang check (an alias bomb used to run for
// ten minutes), not a timing assertion.
func openBounded(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Open(path, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: still parsing after a minute", path)
		return nil
	}
}

// nestedParallel is depth parallel: steps, one inside the other.
func nestedParallel(depth int) string {
	step := "{sleep: 1ms}"
	for i := 0; i < depth; i++ {
		step = "{parallel: [" + step + "]}"
	}
	return "name: deep\ntimeline:\n  - " + step + "\n"
}

// plainSteps is a timeline of n sleep steps without aliases.
func plainSteps(name string, n int) string {
	return "name: " + name + "\ntimeline:\n" + strings.Repeat("  - sleep: 1ms\n", n)
}

// windowed is n named steps and an assertion over each one's window: the
// window check looked every name up by walking the timeline (quadratic).
func windowed(n int) string {
	var b strings.Builder
	b.WriteString("name: windows\ntopology:\n  nics: [{name: eth0, address: 10.0.0.2/24, host: 10.0.0.1/24}]\ntimeline:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {name: s%d, sleep: 100ms}\n", i)
	}
	b.WriteString("asserts:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {grows: {metric: softirqs.NET_RX}, during: {step: s%d}}\n", i)
	}
	return b.String()
}

// TestExpansionLimits: scenarios that expand past a limit (through aliases,
// includes, parameters or nesting) are refused with file:line:col, quickly.
func TestExpansionLimits(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	cases := []struct {
		name  string
		files map[string]string // written to a temp folder; main.yaml is opened
		want  string            // in the error; "" = parses
	}{
		{name: "alias bomb", want: "alias-bomb.yaml:9:46: aliases expand to more than 100000 nodes"},
		{
			name: "aliased steps",
			files: map[string]string{"main.yaml": "name: steps\ntimeline:\n  - &l0 {sleep: 1ms}\n" +
				"  - &l1 {parallel: [" + strings.Repeat("*l0, ", 9) + "*l0]}\n" +
				"  - &l2 {parallel: [" + strings.Repeat("*l1, ", 9) + "*l1]}\n" +
				"  - &l3 {parallel: [" + strings.Repeat("*l2, ", 9) + "*l2]}\n" +
				"  - {parallel: [" + strings.Repeat("*l3, ", 9) + "*l3]}\n"},
			want: "main.yaml:7:52:",
		},
		{
			name:  "plain steps",
			files: map[string]string{"main.yaml": plainSteps("steps", 10_001)},
			want:  "main.yaml:10003:5: the timeline has more than 10000 steps",
		},
		{name: "steps at the limit", files: map[string]string{"main.yaml": plainSteps("steps", 10_000)}},
		{
			name: "steps from an include",
			files: map[string]string{
				"main.yaml": "include: [more.yaml]\n" + plainSteps("steps", 6_000),
				"more.yaml": "timeline:\n" + strings.Repeat("  - sleep: 2ms\n", 6_000),
			},
			want: "the timeline has more than 10000 steps",
		},
		{name: "deep", files: map[string]string{"main.yaml": nestedParallel(30)}, want: "main.yaml:3:"},
		{name: "deep but allowed", files: map[string]string{"main.yaml": nestedParallel(15)}},
		{name: "steps and windowed asserts", files: map[string]string{"main.yaml": windowed(10_000)}},
		{
			name: "aliased text",
			files: map[string]string{"main.yaml": "name: text\ndescription: &d " + long + "\ntimeline:\n" +
				strings.Repeat("  - {name: *d, sleep: 1ms}\n", 50)},
			want: "main.yaml:", // the alias that crossed the limit
		},
		{
			name: "parameter expansion",
			files: map[string]string{"main.yaml": "name: params\nparams: {d: " + long + "}\ntimeline:\n" +
				strings.Repeat("  - {name: \"${d}\", sleep: 1ms}\n", 50)},
			want: "main.yaml: over 4194304 bytes once parameters are substituted",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "testdata/limits/alias-bomb.yaml"
			if tc.files != nil {
				dir := t.TempDir()
				for name, text := range tc.files {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				path = filepath.Join(dir, "main.yaml")
			}
			err := openBounded(t, path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("parsed; want an error with %q", tc.want)
			case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "(the limit)"):
				t.Errorf("error:\n%v\nwant %q and the limit", err, tc.want)
			}
		})
	}
}

// TestUnknownLongKey: an unknown key of a megabyte is reported without a
// quadratic search for the closest known one.
func TestUnknownLongKey(t *testing.T) {
	key := strings.Repeat("k", 900_000)
	dir := t.TempDir()
	path := filepath.Join(dir, "main.yaml")
	text := fmt.Sprintf("name: k\ntimeline:\n  - sleep: 1ms\n    ? %s\n    : 1\n", key)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	err := openBounded(t, path)
	if err == nil || !strings.Contains(err.Error(), "main.yaml:4:7: unknown field") {
		t.Errorf("error = %.200v", err)
	}
}
