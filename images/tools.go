//go:build tools

// The u-root commands of the shell image are built from the module cache;
// importing them here keeps their dependencies in go.mod and go.sum.
package images

import (
	_ "github.com/u-root/u-root/cmds/core/cat"
	_ "github.com/u-root/u-root/cmds/core/dmesg"
	_ "github.com/u-root/u-root/cmds/core/echo"
	_ "github.com/u-root/u-root/cmds/core/free"
	_ "github.com/u-root/u-root/cmds/core/gosh"
	_ "github.com/u-root/u-root/cmds/core/grep"
	_ "github.com/u-root/u-root/cmds/core/ip"
	_ "github.com/u-root/u-root/cmds/core/ls"
	_ "github.com/u-root/u-root/cmds/core/mkdir"
	_ "github.com/u-root/u-root/cmds/core/mount"
	_ "github.com/u-root/u-root/cmds/core/ping"
	_ "github.com/u-root/u-root/cmds/core/ps"
	_ "github.com/u-root/u-root/cmds/core/sleep"
	_ "github.com/u-root/u-root/cmds/core/uname"
)
