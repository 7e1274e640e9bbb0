package scenarios

import (
	"context"
	"errors"
	"time"
)

// parallel is a parallel step: branches the runner starts together. It is
// not repeated, and explain and the runner treat it apart.
type parallel []*Step

func (ps parallel) check(k *checker, _ *Step) {
	for _, ch := range ps {
		k.step(ch)
	}
}

func (ps parallel) explain() (time.Duration, string) { return 0, "in parallel" }

func (ps parallel) label() string { return "parallel" }

func (ps parallel) run(context.Context, Lab, *Step, int) error {
	return errors.New("a parallel step runs its branches, not an action")
}
