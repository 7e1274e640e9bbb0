package agent

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRestoreConsoleLevel(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		wantErr        bool
	}{
		{"quiet boot: back to the default", "6\t4\t1\t7\n", "7\n", false},
		{"quiet flag: back to the default", "4\t4\t1\t7\n", "7\n", false},
		{"at the default: kept", "7\t4\t1\t7\n", "7\t4\t1\t7\n", false},
		{"above it (loglevel=8): kept", "8\t4\t1\t7\n", "8\t4\t1\t7\n", false},
		{"too few levels", "6 4\n", "6 4\n", true},
		{"not numbers", "x\t4\t1\t7\n", "x\t4\t1\t7\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "printk")
			os.WriteFile(path, []byte(tc.in), 0o644)
			err := restoreConsoleLevel(path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			// The kernel's file takes the first level alone; a plain file
			// keeps what was written.
			if got, _ := os.ReadFile(path); string(got) != tc.want {
				t.Errorf("file = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("no file", func(t *testing.T) {
		if err := restoreConsoleLevel(filepath.Join(t.TempDir(), "printk")); err == nil {
			t.Error("no error for a missing file")
		}
	})
}
