package safefs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("ok"), 0o644)
	if b, err := ReadRegular(small, 2); err != nil || string(b) != "ok" {
		t.Errorf("small file: %q, %v", b, err)
	}
	if _, err := ReadRegular(small, 1); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("over the limit: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadRegular(fifo, 10); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("fifo: %v", err)
		}
	case <-time.After(5 * time.Second):
		os.WriteFile(fifo, nil, 0) // unblock the reader
		t.Fatal("reading a FIFO blocked")
	}
	if _, err := ReadRegular("/dev/zero", 10); err == nil {
		t.Error("/dev/zero read")
	}
}
