package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"napilab/kernels"
)

// ShellCommands are the u-root core commands of the shell image; gosh is
// also /bin/sh.
var ShellCommands = []string{"gosh", "ls", "cat", "ip", "ps", "dmesg", "mount", "grep", "echo", "mkdir", "sleep", "uname", "free", "ping"}

// BuildShell writes an initramfs with the agent as /init and u-root's shell
// and core tools under /bin, for lab shell. The agent starts the shell on
// the serial console when the kernel command line has napilab.shell=1.
func BuildShell(ctx context.Context, opts Options) (*Image, error) {
	if opts.ModuleDir == "" {
		var err error
		if opts.ModuleDir, err = ModuleRoot(); err != nil {
			return nil, err
		}
	}
	agent, err := BuildAgent(ctx, opts.CacheDir, opts.ModuleDir)
	if err != nil {
		return nil, err
	}
	files := []File{{Name: "init", Data: agent, Mode: 0o755}}
	tmp, err := os.MkdirTemp("", kernels.TempPattern("napilab-shell-"))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, c := range ShellCommands {
		out := filepath.Join(tmp, c)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, "github.com/u-root/u-root/cmds/core/"+c)
		cmd.Dir = opts.ModuleDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("failed to build u-root %s: %w\n%s", c, err, msg)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: "bin/" + c, Data: data, Mode: 0o755})
		if c == "gosh" {
			files = append(files, File{Name: "bin/sh", Data: data, Mode: 0o755})
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, files); err != nil {
		return nil, err
	}
	return storeImage(opts.CacheDir, "shell", buf.Bytes(), len(agent))
}
