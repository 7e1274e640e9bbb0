package runner

import (
	"context"
	"time"
)

// cleanupTimeout bounds each cleanup call to the guest (stopping a load,
// the final snapshot) once a step failed or the run was interrupted.
var cleanupTimeout = 10 * time.Second

// abortKey is the context key of the abort context.
type abortKey struct{}

// WithAbort returns ctx carrying abort. When ctx ends (a first Ctrl-C) a run
// still cleans up: it stops loads, gathers evidence and shuts QEMU down,
// each call under its own deadline; when abort ends too (a second Ctrl-C)
// those calls end at once and the run goes straight to killing QEMU and
// removing its files. Without WithAbort only the deadlines bound cleanup.
func WithAbort(ctx, abort context.Context) context.Context {
	return context.WithValue(ctx, abortKey{}, abort)
}

// cleanupCtx is the context of one cleanup call: it outlives ctx and ends
// after d or when the abort context of ctx ends.
func cleanupCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	abort, ok := ctx.Value(abortKey{}).(context.Context)
	if !ok {
		return c, cancel
	}
	stop := context.AfterFunc(abort, cancel)
	return c, func() { stop(); cancel() }
}
