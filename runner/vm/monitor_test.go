package vm

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

func TestMonitorSysrq(t *testing.T) {
	lab, qemu := net.Pipe()
	got := make(chan string, 1)
	go func() {
		qemu.Write([]byte("QEMU 7.2.0 monitor - type 'help' for more information\r\n(qemu) "))
		b, _ := io.ReadAll(qemu)
		got <- string(b)
	}()
	m := NewMonitor(lab)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.SysRq(ctx, "w", "l"); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if s := <-got; s != "sendkey alt-sysrq-w\nsendkey alt-sysrq-l\n" {
		t.Errorf("monitor got %q", s)
	}
	if err := m.SysRq(ctx, "w"); err == nil {
		t.Error("no error from a closed monitor")
	}
}

// A monitor QEMU no longer reads does not hold the evidence up.
func TestMonitorSysrqDeadline(t *testing.T) {
	lab, _ := net.Pipe() // nobody reads the other end
	m := NewMonitor(lab)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := m.SysRq(ctx, "w"); err == nil {
		t.Error("a write nobody reads returned no error")
	}
}
