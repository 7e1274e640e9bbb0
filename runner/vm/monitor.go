package vm

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// Monitor is lab's end of QEMU's human monitor. What QEMU writes there (a
// banner, echoes) is read and thrown away, so QEMU never waits on lab.
type Monitor struct{ c net.Conn }

// NewMonitor reads and discards what QEMU writes on c.
func NewMonitor(c net.Conn) *Monitor {
	go io.Copy(io.Discard, c)
	return &Monitor{c: c}
}

// SysRq sends SysRq keys on the emulated keyboard (sendkey): the fallback
// when the agent no longer answers.
func (m *Monitor) SysRq(ctx context.Context, keys ...string) error {
	if dl, ok := ctx.Deadline(); ok {
		m.c.SetWriteDeadline(dl)
		defer m.c.SetWriteDeadline(time.Time{})
	}
	for _, k := range keys {
		if _, err := fmt.Fprintf(m.c, "sendkey alt-sysrq-%s\n", strings.ToLower(k)); err != nil {
			return fmt.Errorf("qemu monitor: %w", err)
		}
		time.Sleep(200 * time.Millisecond) // let the guest print before the next dump
	}
	return nil
}

// Close closes lab's end.
func (m *Monitor) Close() error { return m.c.Close() }
