package scenarios

import (
	"context"
	"strings"
	"time"

	"napilab/internal/suggest"
)

// startLoads is a start step: the loads it starts, in order.
type startLoads []string

func (l startLoads) check(k *checker, st *Step) { k.checkLoads(st.Pos, l) }

func (l startLoads) explain() (time.Duration, string) { return 0, l.label() }

func (l startLoads) label() string { return "start " + strings.Join(l, ", ") }

func (l startLoads) run(ctx context.Context, lab Lab, _ *Step, _ int) error {
	for _, n := range l {
		if err := lab.StartLoad(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// stopLoads is a stop step: the loads it stops, in order.
type stopLoads []string

func (l stopLoads) check(k *checker, st *Step) { k.checkLoads(st.Pos, l) }

func (l stopLoads) explain() (time.Duration, string) { return 0, l.label() }

func (l stopLoads) label() string { return "stop " + strings.Join(l, ", ") }

func (l stopLoads) run(ctx context.Context, lab Lab, _ *Step, _ int) error {
	for _, n := range l {
		if err := lab.StopLoad(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// checkLoads checks that a step's loads are declared.
func (k *checker) checkLoads(p Pos, names []string) {
	for _, l := range names {
		k.loadRef(p, l)
	}
}

// loadRef returns the load a step or an assertion names, or reports that
// none has that name. A load the file declares that did not decode was
// reported where it is written: nil, without a second error.
func (k *checker) loadRef(p Pos, name string) *Load {
	if l, ok := k.s.Loads[name]; ok {
		return l
	}
	if !k.s.written.loads[name] {
		names := sortedKeys(k.s.Loads)
		if best := suggest.Closest(name, names); best != "" {
			k.c.add(p, "no load %q under loads: (did you mean %s?)", name, best)
		} else {
			k.c.add(p, "no load %q under loads: (known: %s)", name, strings.Join(names, ", "))
		}
	}
	return nil
}
