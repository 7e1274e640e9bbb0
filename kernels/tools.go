package kernels

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// toolPackages maps each host tool a build may need to its Debian package.
var toolPackages = map[string]string{
	"make":  "make",
	"gcc":   "gcc",
	"flex":  "flex",
	"bison": "bison",
	"bc":    "bc",
	"tar":   "tar",
	"xz":    "xz-utils",
	"patch": "patch",
	// Variants need these to build on their base's build; without them they build in full.
	"unshare": "util-linux",
	"mount":   "mount",
	// Bases with a suite are fetched with these (see fetch.go).
	"apt-get":  "apt",
	"dpkg-deb": "dpkg",
}

// buildTools are needed by every build that runs make.
var buildTools = []string{"make", "gcc", "flex", "bison", "bc", "tar", "xz"}

// checkTools returns a *MissingToolError for each tool not on PATH.
func checkTools(tools ...string) error {
	var errs *multierror.Error
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			errs = multierror.Append(errs, &MissingToolError{Tool: tool, Package: toolPackages[tool]})
		}
	}
	return flatten(errs)
}

// compilerVersion returns the first line of `gcc --version`.
func compilerVersion(ctx context.Context) (string, error) {
	if err := checkTools("gcc"); err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, "gcc", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("failed to run gcc --version: %w", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first), nil
}

// haveCcache reports whether ccache is on PATH.
func haveCcache() bool {
	_, err := exec.LookPath("ccache")
	return err == nil
}
