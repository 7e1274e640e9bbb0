// Package nsthread runs a function on an OS thread moved into another
// network namespace (the agent's guest namespaces, the runner's host
// namespace for taps).
package nsthread

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// Run runs fn on a locked OS thread after enter moved the thread to
// another network namespace, then moves it back. A thread that cannot go
// back stays locked, so the runtime retires it with its goroutine.
func Run(enter, fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := enter(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		return fmt.Errorf("failed to leave the network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}
