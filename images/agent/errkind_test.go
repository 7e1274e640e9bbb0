package agent

import (
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"napilab/internal/wire"
)

// TestServeErrorKinds checks that every answer's error says who failed: the
// kernel with an errno, the agent, or the agent's own timeout.
func TestServeErrorKinds(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing", "file")
	for _, tc := range []struct {
		name  string
		req   *wire.Message
		kind  string
		errno int
	}{
		{"a write the kernel refuses", &wire.Message{ID: 1, Op: wire.OpWrite, Args: wire.Encode(wire.File{Path: missing, Value: "1"})},
			wire.KindErrno, int(syscall.ENOENT)},
		{"bad args", &wire.Message{ID: 2, Op: wire.OpWrite, Args: []byte(`{"path":1}`)}, wire.KindAgent, 0},
		{"an unknown op", &wire.Message{ID: 3, Op: "bogus"}, wire.KindAgent, 0},
		{"no such program", &wire.Message{ID: 4, Op: wire.OpExec, Args: wire.Encode(wire.Exec{Argv: []string{"napilab-no-such-program"}})},
			wire.KindAgent, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, guest := net.Pipe()
			defer host.Close()
			defer guest.Close()
			go newAgent().serve(wire.NewConn(guest), tc.req, nil)
			m, err := wire.NewConn(host).Recv()
			if err != nil {
				t.Fatal(err)
			}
			if m.Error == "" || m.Kind != tc.kind || m.Errno != tc.errno {
				t.Errorf("answer %+v, want kind %q errno %d", m, tc.kind, tc.errno)
			}
		})
	}
}

func TestErrorKind(t *testing.T) {
	for _, tc := range []struct {
		err   error
		kind  string
		errno int
	}{
		// netlink wraps the errno of an NLMSG_ERROR with the extack message.
		{fmt.Errorf("%w: Invalid queue count", syscall.EINVAL), wire.KindErrno, int(syscall.EINVAL)},
		{fmt.Errorf("setup veth: %w", fmt.Errorf("%w: x", syscall.EBUSY)), wire.KindErrno, int(syscall.EBUSY)},
		{timeoutError{fmt.Errorf("exec x: killed after 1s")}, wire.KindTimeout, 0},
		{fmt.Errorf("no such program"), wire.KindAgent, 0},
		// The fault switch stands for a kernel that refused the write.
		{fmt.Errorf("write /napilab/fault: %w", faultError{0.2}), wire.KindErrno, int(syscall.EIO)},
	} {
		if kind, errno := errorKind(tc.err); kind != tc.kind || errno != tc.errno {
			t.Errorf("errorKind(%v) = %s %d, want %s %d", tc.err, kind, errno, tc.kind, tc.errno)
		}
	}
}
