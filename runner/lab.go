package runner

import (
	"context"

	"napilab/scenarios"
)

// action performs iteration i of a step's action.
func (t *timeline) action(ctx context.Context, st *scenarios.Step, i int) error {
	return st.Run(ctx, lab{t}, i)
}

// lab is what a step's action runs against (scenarios.Lab): the timeline's
// control channel, loads, waits, sched, exec and kselftest steps.
type lab struct{ t *timeline }

func (l lab) Call(ctx context.Context, op string, args, reply any) error {
	return l.t.ctl.call(ctx, op, args, reply)
}

func (l lab) StartLoad(ctx context.Context, name string) error { return l.t.startLoad(ctx, name) }

func (l lab) StopLoad(ctx context.Context, name string) error { return l.t.stopLoad(ctx, name) }

func (l lab) Wait(ctx context.Context, w *scenarios.Wait) error { return l.t.wait(ctx, w) }

func (l lab) Sched(ctx context.Context, x *scenarios.Sched) error { return l.t.sched(ctx, x) }

func (l lab) Exec(ctx context.Context, st *scenarios.Step, run int) error {
	return l.t.exec(ctx, st, run)
}

func (l lab) Kselftest(ctx context.Context, st *scenarios.Step, name string) error {
	return l.t.kselftest(ctx, st, name)
}
