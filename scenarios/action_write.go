package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"napilab/internal/wire"
)

// Write writes a value (or cycles through values) to a sysfs/procfs file.
type Write struct {
	Path   string   `yaml:"path"`
	Netns  string   `yaml:"netns"`
	Value  string   `yaml:"value"`
	Values []string `yaml:"values"`
}

func (w *Write) check(k *checker, st *Step) {
	k.checkNetns(st.Pos, w.Netns)
	if w.Path == "" {
		k.c.add(st.Pos, "write needs a path")
	}
	if (w.Value == "") == (len(w.Values) == 0) {
		k.c.add(st.Pos, "write needs value: or values:, not both")
	}
}

func (w *Write) explain() (time.Duration, string) {
	return 0, fmt.Sprintf("write %s > %s%s", values(w.Value, w.Values), w.Path, inNetns(w.Netns))
}

func (w *Write) label() string {
	v := w.Value
	if len(w.Values) > 0 {
		v = strings.Join(w.Values, "/")
	}
	return fmt.Sprintf("write %s > %s", v, w.Path)
}

func (w *Write) value(i int) string { return cycle(w.Value, w.Values, i) }

func (w *Write) run(ctx context.Context, lab Lab, _ *Step, i int) error {
	return lab.Call(ctx, wire.OpWrite, wire.File{Path: w.Path, Netns: w.Netns, Value: w.value(i)}, nil)
}
