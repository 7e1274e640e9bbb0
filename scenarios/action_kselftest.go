package scenarios

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// kselftests is a kselftest step: upstream selftests ("net:veth.sh") run in
// order with the kselftest runner.
type kselftests []string

var kselftestRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9_-]*)*:[A-Za-z0-9][A-Za-z0-9_.+-]*$`)

// ValidKselftest reports whether name is a kselftest as kselftest-list.txt
// names it, "collection:test" (net:veth.sh, net/forwarding:router.sh).
func ValidKselftest(name string) bool { return kselftestRe.MatchString(name) }

func (ks kselftests) check(k *checker, st *Step) {
	for _, name := range ks {
		if !ValidKselftest(name) {
			k.c.add(st.Pos, "kselftest %q: want collection:test as kselftest-list.txt names it, e.g. net:veth.sh", name)
		}
	}
	if st.Every > 0 {
		k.c.add(st.Pos, "kselftest runs each test once: drop every:")
	}
}

func (ks kselftests) explain() (time.Duration, string) {
	return 0, "kselftest " + strings.Join(ks, ", ") + " (Debian image)"
}

func (ks kselftests) label() string { return "kselftest" }

func (ks kselftests) run(ctx context.Context, lab Lab, st *Step, _ int) error {
	for _, name := range ks {
		if err := lab.Kselftest(ctx, st, name); err != nil {
			return err
		}
	}
	return nil
}
