package runner

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// monitor is lab's end of QEMU's human monitor. What QEMU writes there (a
// banner, echoes) is read and thrown away, so QEMU never waits on lab.
type monitor struct{ c net.Conn }

func newMonitor(c net.Conn) *monitor {
	go io.Copy(io.Discard, c)
	return &monitor{c: c}
}

// sysrq sends SysRq keys on the emulated keyboard (sendkey): the fallback
// when the agent no longer answers.
func (m *monitor) sysrq(ctx context.Context, keys ...string) error {
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

func (m *monitor) Close() error { return m.c.Close() }
