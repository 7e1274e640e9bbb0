package kernels

import (
	"fmt"
	"regexp"
	"strings"
)

// maxRelease is the longest kernel release: utsname's release field holds
// 64 characters and a NUL.
const maxRelease = 64

// releaseRe is what `make kernelrelease` prints: version, extraversion and
// localversion, made of these characters. The first one is a letter or a
// digit, so that a release is never ".", "..", a hidden name or an option.
var releaseRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// ParseRelease checks the content of a kernel.release file and returns the
// release it names. The release becomes a path (lib/modules/<release>) and
// an argument (depmod), so this is the one rule for every place a release
// enters: the build's output, an artifact and an archive.
func ParseRelease(data []byte) (string, error) {
	s := strings.TrimSuffix(string(data), "\n")
	switch {
	case s == "":
		return "", fmt.Errorf("bad kernel release: empty")
	case len(s) > maxRelease:
		return "", fmt.Errorf("bad kernel release %.80q: %d bytes, want at most %d", s, len(s), maxRelease)
	case !releaseRe.MatchString(s):
		return "", fmt.Errorf("bad kernel release %q: want one line of [A-Za-z0-9._+-], starting with a letter or digit", s)
	}
	return s, nil
}
