package agent

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSetTimeouts(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	tests := []struct {
		name    string
		fd      int
		wantErr error
	}{
		{"socket", fd, nil},
		{"no fd: the first option fails, errno kept", -1, unix.EBADF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := setTimeouts(tc.fd, 1500*time.Millisecond)
			if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
				t.Fatalf("setTimeouts = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "SO_RCVTIMEO") {
					t.Errorf("error %q does not name the option", err)
				}
				return
			}
			for opt, want := range map[int]time.Duration{unix.SO_RCVTIMEO: 1500 * time.Millisecond, unix.SO_SNDTIMEO: rawSendTimeout} {
				tv, err := unix.GetsockoptTimeval(tc.fd, unix.SOL_SOCKET, opt)
				if err != nil {
					t.Fatal(err)
				}
				if got := time.Duration(tv.Nano()); got != want {
					t.Errorf("option %d = %v, want %v", opt, got, want)
				}
			}
		})
	}
}
