package images

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone says whether pid has exited (a zombie counts: it runs nothing).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(data), ") ")
	return strings.HasPrefix(after, "Z")
}

// Cancelling a Debian build kills debootstrap's whole process group, not
// just its first process, and removes its temp tree.
func TestBuildDebianCancelKillsGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("BuildDebian needs root")
	}
	bin := t.TempDir()
	unshare := "/usr/bin/unshare"
	if _, err := os.Stat(unshare); err != nil {
		t.Skip("needs unshare(1)")
	}
	os.Symlink(unshare, filepath.Join(bin, "unshare"))
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := "#!/bin/sh\nsleep 60 &\necho $! > " + pidFile + ".tmp && mv " + pidFile + ".tmp " + pidFile + "\nwait\n"
	if err := os.WriteFile(filepath.Join(bin, "debootstrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	cache := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := BuildDebian(ctx, Options{CacheDir: cache}, Debian{Suite: "fake", Mirror: "http://127.0.0.1:9/none"})
		done <- err
	}()
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the fake debootstrap did not start")
		}
		data, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("BuildDebian succeeded after cancel")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("BuildDebian did not return after cancel")
	}
	for deadline := time.Now().Add(2 * time.Second); !gone(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("debootstrap's child %d still runs after cancel", pid)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "images", ".debootstrap-*")); len(left) > 0 {
		t.Errorf("temp trees left: %q", left)
	}
}
