package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// printkFile holds the console's log level, then the default message
// level, the minimum console level and the kernel's default console level
// (CONFIG_CONSOLE_LOGLEVEL_DEFAULT).
const printkFile = "/proc/sys/kernel/printk"

// restoreConsoleLevel raises the console's log level to the kernel's
// default when the boot lowered it (the lab boots with loglevel=6: see
// runner.bootTuning), so that what the run prints at KERN_INFO, SysRq's
// task lists and stacks among it, reaches the console. A level at or above
// the default (a scenario's loglevel=8) stays.
func restoreConsoleLevel(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f := strings.Fields(string(b))
	if len(f) != 4 {
		return fmt.Errorf("%s: want 4 levels, got %q", path, strings.TrimSpace(string(b)))
	}
	level, err1 := strconv.Atoi(f[0])
	def, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s: levels are not numbers: %q", path, strings.TrimSpace(string(b)))
	}
	if level >= def {
		return nil
	}
	return os.WriteFile(path, []byte(f[3]+"\n"), 0o644)
}
