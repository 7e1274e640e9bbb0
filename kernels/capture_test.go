package kernels

import (
	"os"
	"strings"
	"testing"
)

// readCapture reads a testdata capture: "KEY: value" header lines, a blank
// line, then the raw output, as syzkaller's report testdata does.
func readCapture(t *testing.T, path string) (map[string]string, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(string(data), "\n\n")
	if !ok {
		t.Fatalf("%s: no blank line after the header", path)
	}
	hdr := make(map[string]string)
	for _, line := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("%s: bad header line %q", path, line)
		}
		hdr[k] = v
	}
	return hdr, body
}
