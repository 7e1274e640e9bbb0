package scenarios

import (
	"context"
	"time"
)

// sleep is a sleep step: it waits, and the runner gives it no deadline.
type sleep Duration

func (d sleep) check(*checker, *Step) {}

func (d sleep) explain() (time.Duration, string) { return time.Duration(d), d.label() }

func (d sleep) label() string { return "sleep " + time.Duration(d).String() }

func (d sleep) run(ctx context.Context, _ Lab, _ *Step, _ int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(d)):
	}
	return nil
}
