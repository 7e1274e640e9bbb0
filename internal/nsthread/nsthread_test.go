package nsthread

import (
	"errors"
	"os"
	"testing"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TestRun: fn runs in the namespace enter made, and the thread is back in
// its own afterwards (root: unshare needs CAP_SYS_ADMIN).
func TestRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	before, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	var inside netns.NsHandle
	err = Run(func() error { return unix.Unshare(unix.CLONE_NEWNET) }, func() error {
		inside, err = netns.Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if inside.Equal(before) {
		t.Error("fn ran in the caller's namespace")
	}
	after, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if !after.Equal(before) {
		t.Error("the thread did not come back to its namespace")
	}
	boom := errors.New("boom")
	if err := Run(func() error { return boom }, func() error { t.Error("fn ran after enter failed"); return nil }); !errors.Is(err, boom) {
		t.Errorf("err %v, want enter's", err)
	}
}
