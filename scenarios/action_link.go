package scenarios

import (
	"context"
	"fmt"
	"time"

	"napilab/internal/wire"
)

// Link sets a device up or down.
type Link struct {
	Dev   string `yaml:"dev"`
	Netns string `yaml:"netns"`
	State string `yaml:"state"` // up, down, toggle
}

func (l *Link) check(k *checker, st *Step) {
	k.checkRef(st.Pos, l.Netns, l.Dev)
	if !contains([]string{"up", "down", "toggle"}, l.State) {
		k.c.add(st.Pos, "link state %q: want up, down or toggle", l.State)
	}
}

func (l *Link) explain() (time.Duration, string) {
	return 0, fmt.Sprintf("link %s %s%s", l.Dev, l.State, inNetns(l.Netns))
}

func (l *Link) label() string { return fmt.Sprintf("link %s %s", l.Dev, l.State) }

// value is up or down; toggle starts with down.
func (l *Link) value(i int) string {
	if l.State == "up" || l.State == "toggle" && i%2 == 1 {
		return "up"
	}
	return "down"
}

func (l *Link) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	return lab.Call(ctx, wire.OpLink, wire.Link{Dev: l.Dev, Netns: l.Netns, Up: l.value(i) == "up"}, nil)
}
