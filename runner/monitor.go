package runner

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// monitorSysrq sends SysRq keys through QEMU's human monitor (sendkey on the
// emulated keyboard): the fallback when the agent no longer answers.
func monitorSysrq(ctx context.Context, sock string, keys ...string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return fmt.Errorf("qemu monitor: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	r := bufio.NewReader(c)
	// The monitor greets with a banner and a "(qemu) " prompt.
	if _, err := r.ReadString(')'); err != nil {
		return fmt.Errorf("qemu monitor: %w", err)
	}
	for _, k := range keys {
		if _, err := fmt.Fprintf(c, "sendkey alt-sysrq-%s\n", strings.ToLower(k)); err != nil {
			return fmt.Errorf("qemu monitor: %w", err)
		}
		time.Sleep(200 * time.Millisecond) // let the guest print before the next dump
	}
	return nil
}
