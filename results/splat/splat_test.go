package splat

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"napilab/results"
)

var update = flag.Bool("update", false, "rewrite the headers of testdata files")

// TestConsoleSplats checks testdata/console/NNN: "TITLE:" and "TYPE:" header
// lines, one pair per expected splat, a blank line, then the raw console.
// A file without a header expects no splat.
func TestConsoleSplats(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "console", "[0-9]*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, log := splatParseTestFile(t, data)
			splats := Find(log)
			splatCheck(t, log, splats)
			var got []string
			for _, s := range splats {
				got = append(got, fmt.Sprintf("TITLE: %s\nTYPE: %s", s.Title, s.Type))
			}
			if *update {
				splatWriteTestFile(t, file, got, log)
				return
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func splatParseTestFile(t *testing.T, data []byte) ([]string, []byte) {
	var want []string
	rest := data
	for {
		line, after, found := bytes.Cut(rest, []byte("\n"))
		if !found {
			break
		}
		s := string(line)
		switch {
		case strings.HasPrefix(s, "TITLE: "):
			want = append(want, s)
		case strings.HasPrefix(s, "TYPE: ") && len(want) > 0 && !strings.Contains(want[len(want)-1], "\n"):
			want[len(want)-1] += "\n" + s
		case s == "" && len(want) > 0:
			return want, after
		default:
			if len(want) > 0 {
				t.Fatalf("bad header line %q", s)
			}
			return nil, data
		}
		rest = after
	}
	t.Fatalf("header without a log")
	return nil, nil
}

func splatWriteTestFile(t *testing.T, file string, headers []string, log []byte) {
	var buf bytes.Buffer
	for _, h := range headers {
		buf.WriteString(h + "\n")
	}
	if len(headers) != 0 {
		buf.WriteString("\n")
	}
	buf.Write(log)
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// splatCheck verifies the invariants every result must hold.
func splatCheck(t testing.TB, log []byte, splats []results.Splat) {
	lines := strings.Split(string(log), "\n")
	for i, s := range splats {
		if s.Type == "" || s.Title == "" || s.Report == "" {
			t.Fatalf("splat %d is incomplete: %+v", i, s)
		}
		if s.Line < 1 || s.Line > len(lines) {
			t.Fatalf("splat %d: line %d out of range [1, %d]", i, s.Line, len(lines))
		}
		first, _, _ := strings.Cut(s.Report, "\n")
		if first != strings.Trim(lines[s.Line-1], "\r") {
			t.Fatalf("splat %d: report starts with %q, line %d is %q", i, first, s.Line, lines[s.Line-1])
		}
		if s.Frame != "" && !strings.HasSuffix(s.Title, " in "+s.Frame) {
			t.Fatalf("splat %d: frame %q not in title %q", i, s.Frame, s.Title)
		}
		if i > 0 && s.Line <= splats[i-1].Line {
			t.Fatalf("splat %d: line %d not after %d", i, s.Line, splats[i-1].Line)
		}
	}
}

func TestSplatTitleStable(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{
			name: "warning",
			a: `[   23.412350] WARNING: CPU: 1 PID: 312 at net/core/dev.c:6402 napi_disable+0xb4/0xd0
[   23.414501] RIP: 0010:napi_disable+0xb4/0xd0
[   23.431002] ---[ end trace 0000000000000000 ]---`,
			b: `[  301.000012][ T1923] WARNING: CPU: 0 PID: 1923 at net/core/dev.c:6402 napi_disable.cold+0x3/0x10 [veth]
[  301.000013][ T1923] RIP: 0010:napi_disable.cold+0x3/0x10
[  301.000014][ T1923] ---[ end trace 7d2f1e9a00c3b1f4 ]---`,
			want: "WARNING in napi_disable",
		},
		{
			name: "warning from RIP",
			a: `WARNING: CPU: 1 PID: 1 at 0xffffffff81c2d3e4
RIP: 0010:veth_poll.isra.0+0x11/0x20 [veth]`,
			b: `WARNING: CPU: 3 PID: 77 at 0xffffffff81c2f000
RIP: 0010:veth_poll.constprop.0+0x91/0x200 [veth]`,
			want: "WARNING in veth_poll",
		},
		{
			name: "soft lockup",
			a: `[   68.120011] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [ksoftirqd/0:15]
[   68.120011] RIP: 0010:veth_poll+0x7e/0x1d0 [veth]`,
			b: `[  999.120011] watchdog: BUG: soft lockup - CPU#1 stuck for 48s! [kworker/1:2:1077]
[  999.120011] RIP: 0010:veth_poll+0x91/0x1d0 [veth]`,
			want: "BUG: soft lockup in veth_poll",
		},
		{
			name: "hung task",
			a: `INFO: task kworker/u4:2:87 blocked for more than 122 seconds.
Call Trace:
 <TASK>
 __schedule+0x343/0xa60
 msleep+0x2d/0x40
 napi_disable+0x5c/0xd0`,
			b: `INFO: task ip:4121 blocked for more than 20 seconds.
Call Trace:
 __schedule+0x1/0x2
 schedule+0x5d/0xd0
 usleep_range_state+0x64/0x90
 napi_disable+0x1c/0xd0 [veth]`,
			want: "INFO: task hung in napi_disable",
		},
		{
			name: "unregister",
			a:    `unregister_netdevice: waiting for eth0 to become free. Usage count = 2`,
			b:    `[ 12.000000] unregister_netdevice: waiting for veth_a12 to become free. Usage count = -1`,
			want: "unregister_netdevice: waiting for DEV to become free",
		},
		{
			name: "scheduling while atomic",
			a: `BUG: scheduling while atomic: swapper/0/0/0x00000002
Call Trace:
 dump_stack_lvl+0x44/0x5c
 __schedule_bug.cold+0x7d/0x8b
 __schedule+0x6b3/0xa60
 schedule+0x5d/0xd0
 napi_disable+0x5c/0xd0`,
			b: `BUG: scheduling while atomic: ip/312/0x00000201
Call Trace:
 napi_disable.isra.0+0x5c/0xd0`,
			want: "BUG: scheduling while atomic in napi_disable",
		},
		{
			name: "refcount",
			a: `refcount_t: underflow; use-after-free.
WARNING: CPU: 0 PID: 1 at lib/refcount.c:28 refcount_warn_saturate+0xb4/0x110
RIP: 0010:refcount_warn_saturate+0xb4/0x110
Call Trace:
 <TASK>
 napi_threaded_poll+0x51/0x120
 </TASK>
---[ end trace 0000000000000000 ]---`,
			b: `WARNING: lib/refcount.c:28 at refcount_warn_saturate+0xb4/0x110, CPU#1: init/1
Call Trace:
 napi_threaded_poll.cold+0x1/0x2`,
			want: "WARNING: refcount bug in napi_threaded_poll",
		},
		{
			name: "list",
			a: `list_add corruption. prev->next should be next (ffff888006a0c000), but was 0000000000000000.
WARNING: CPU: 1 PID: 88 at lib/list_debug.c:30 __list_add_valid+0x8d/0xa0
Call Trace:
 <TASK>
 ____napi_schedule+0x3a/0xc0
 </TASK>`,
			b: `WARNING: CPU: 0 PID: 2 at lib/list_debug.c:32 __list_add_valid_or_report+0x9a/0xc0
Call Trace:
 ____napi_schedule.isra.0+0x3a/0xc0`,
			want: "BUG: corrupted list in ____napi_schedule",
		},
		{
			name: "odebug",
			a: `ODEBUG: free active (active state 0) object: ffff888006a0c000 object type: timer_list hint: gro_flush_timeout+0x0/0x10
WARNING: CPU: 0 PID: 1 at lib/debugobjects.c:509 debug_print_object+0x16d/0x230
Call Trace:
 debug_check_no_obj_freed+0x1f2/0x280
 kfree+0xfa/0x2a0
 free_netdev+0x1a0/0x230`,
			b: `WARNING: CPU: 1 PID: 7 at lib/debugobjects.c:514 debug_print_object+0x1/0x2
Call Trace:
 free_netdev+0x1/0x2`,
			want: "WARNING: ODEBUG bug in free_netdev",
		},
		{
			name: "ubsan",
			a: `UBSAN: shift-out-of-bounds in net/core/dev.c:6612:21
shift exponent 64 is too large for 64-bit type 'long unsigned int'
CPU: 0 PID: 1 Comm: init Not tainted 6.1.0-napilab #1
Call Trace:
 <TASK>
 dump_stack_lvl+0x44/0x5c
 ubsan_epilogue+0x5/0x40
 __ubsan_handle_shift_out_of_bounds.cold+0x61/0xef
 napi_busy_loop+0x2a3/0x3c0
 </TASK>`,
			b: `UBSAN: shift-out-of-bounds in net/core/dev.c:6700:3
Call Trace:
 __ubsan_handle_shift_out_of_bounds+0x1/0x2
 napi_busy_loop.cold+0x1/0x2`,
			want: "UBSAN: shift-out-of-bounds in napi_busy_loop",
		},
		{
			name: "sleeping in atomic",
			a: `BUG: sleeping function called from invalid context at kernel/locking/mutex.c:580
in_atomic(): 1, irqs_disabled(): 0, non_block: 0, pid: 1, name: init
Call Trace:
 <TASK>
 dump_stack_lvl+0x44/0x5c
 __might_resched.cold+0x13b/0x16f
 mutex_lock_nested+0x20/0x30
 dev_set_threaded+0x2a/0x1a0
 </TASK>`,
			b: `BUG: sleeping function called from invalid context at net/core/dev.c:6512
Call Trace:
 __might_sleep+0x1/0x2
 dev_set_threaded+0x1/0x2`,
			want: "BUG: sleeping function called from invalid context in dev_set_threaded",
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			for _, log := range []string{test.a, test.b} {
				splats := Find([]byte(log))
				if len(splats) != 1 || splats[0].Title != test.want {
					t.Errorf("Find(%q) = %+v, want one %q", log, splats, test.want)
				}
			}
		})
	}
}

func TestSplatLines(t *testing.T) {
	tests := []struct {
		name  string
		log   string
		title string
		line  int
		time  float64
	}{
		{
			name:  "crlf and caller id",
			log:   "[    1.000000][    T1] booting\r\n[   12.345678][    C0] Kernel panic - not syncing: Fatal exception\r\n",
			title: "kernel panic: Fatal exception",
			line:  2,
			time:  12.345678,
		},
		{
			name:  "no timestamps",
			log:   "agent: start\nKernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)\n",
			title: "kernel panic: VFS: Unable to mount root fs on unknown-block(0,0)",
			line:  2,
			time:  -1,
		},
		{
			name:  "agent text before the timestamp",
			log:   "[    1.000000] x\nagent: step 1[    7.500000] BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 31s!\n",
			title: "BUG: workqueue lockup",
			line:  2,
			time:  7.5,
		},
		{
			name: "oops style gpf",
			log: "[    9.000001] Oops: general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN NOPTI\n" +
				"[    9.000002] KASAN: null-ptr-deref in range [0x0000000000000008-0x000000000000000f]\n" +
				"[    9.000003] RIP: 0010:dev_gro_receive+0x3bd/0x6a0\n",
			title: "general protection fault in dev_gro_receive",
			line:  1,
			time:  9.000001,
		},
		{
			name:  "new warning layout",
			log:   "[    3.000000] WARNING: net/core/dev.c:7012 at napi_disable_locked+0x1c/0xd0, CPU#1: ip/312\n",
			title: "WARNING in napi_disable_locked",
			line:  1,
			time:  3,
		},
		{
			name: "stack protector panic",
			log:  "[    3.000000] Kernel panic - not syncing: stack-protector: Kernel stack is corrupted in: veth_xmit+0x5f2/0x600\n",
			// The offset goes, the function stays.
			title: "kernel panic: stack-protector: Kernel stack is corrupted in: veth_xmit",
			line:  1,
			time:  3,
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			splats := Find([]byte(test.log))
			splatCheck(t, []byte(test.log), splats)
			if len(splats) != 1 {
				t.Fatalf("got %d splats: %+v", len(splats), splats)
			}
			s := splats[0]
			if s.Title != test.title || s.Line != test.line || s.Time != test.time {
				t.Errorf("got %q line %d time %v, want %q line %d time %v",
					s.Title, s.Line, s.Time, test.title, test.line, test.time)
			}
		})
	}
}

func TestSplatReportEnd(t *testing.T) {
	trace := "Call Trace:\n <TASK>\n napi_disable+0x5c/0xd0\n </TASK>\n"
	tests := []struct {
		name  string
		log   string
		lines int    // report lines of the first splat
		last  string // its last line
	}{
		{
			name:  "dump_stack report ends with its trace",
			log:   "BUG: sleeping function called from invalid context at net/core/dev.c:6385\n" + trace + "IPv6: ADDRCONF(NETDEV_UP): veth0: link is not ready\n",
			lines: 5,
			last:  " </TASK>",
		},
		{
			name:  "oops runs to the end marker",
			log:   "BUG: kernel NULL pointer dereference, address: 0000000000000008\nOops: 0000 [#1] PREEMPT SMP NOPTI\n" + trace + "Modules linked in: veth\n---[ end trace 0000000000000000 ]---\nIPv6: x\n",
			lines: 8,
			last:  "---[ end trace 0000000000000000 ]---",
		},
		{
			name:  "next splat ends the report",
			log:   "INFO: task ip:412 blocked for more than 122 seconds.\nCall Trace:\n rtnl_lock+0x15/0x20\nWARNING: CPU: 0 PID: 1 at net/core/dev.c:1 f+0x1/0x2\n",
			lines: 3,
			last:  " rtnl_lock+0x15/0x20",
		},
		{
			name:  "bounded",
			log:   "WARNING: CPU: 0 PID: 1 at net/core/dev.c:1 f+0x1/0x2\n" + strings.Repeat("Modules linked in: veth\n", 100),
			lines: splatMaxLines,
			last:  "Modules linked in: veth",
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			splats := Find([]byte(test.log))
			if len(splats) == 0 {
				t.Fatal("no splat")
			}
			lines := strings.Split(strings.TrimSuffix(splats[0].Report, "\n"), "\n")
			if len(lines) != test.lines || lines[len(lines)-1] != test.last {
				t.Errorf("got %d lines ending with %q, want %d ending with %q", len(lines), lines[len(lines)-1], test.lines, test.last)
			}
		})
	}
}

func TestSplatAllowed(t *testing.T) {
	allow := []*regexp.Regexp{regexp.MustCompile(`^WARNING in lkdtm_`), regexp.MustCompile(`^kernel panic: `)}
	for title, want := range map[string]bool{
		"WARNING in lkdtm_WARNING":     true,
		"kernel panic: Hard LOCKUP":    true,
		"WARNING in napi_disable":      false,
		"INFO: task hung in rtnl_lock": false,
	} {
		if got := Allowed(title, allow); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", title, got, want)
		}
	}
}

func FuzzFindSplats(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "console", "[0-9]*"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("BUG: \nOops: [#1]\n---[ end trace\n"))
	f.Add([]byte("[    0.000000] BUG: KASAN: a in b\n[    0.000000] ====================\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		splatCheck(t, data, Find(data))
	})
}

func TestStackFrame(t *testing.T) {
	stack := "[<0>] usleep_range_state+0x6a/0xa0\n[<0>] napi_disable+0x3a/0x70\n[<0>] dev_set_threaded+0x50/0x120\n[<0>] kthread+0xe6/0x110\n"
	if got := StackFrame(stack); got != "napi_disable" {
		t.Errorf("StackFrame = %q, want napi_disable", got)
	}
	if got := StackFrame("[<0>] schedule+0x1/0x2\n"); got != "" {
		t.Errorf("StackFrame of generic frames = %q, want empty", got)
	}
}

// TestFindSplatsLinesKeepsNumbers: splats found among the kept lines of a
// longer console carry their line in the whole console, and a report ends
// at a gap (the lines after it are not its own).
func TestFindSplatsLinesKeepsNumbers(t *testing.T) {
	lines := []Line{
		{1, "[    0.000000] Linux version 6.1"},
		{5000, "[   13.000001] WARNING: CPU: 1 PID: 77 at net/core/dev.c:6800 napi_disable+0x5e/0x70"},
		{5001, "[   13.000002] Call Trace:"},
		{9000, "[   14.000000]  dev_close+0x10/0x20"},
		{9001, "[   14.000001] ---[ end trace 0000000000000000 ]---"},
	}
	sp := FindLines(lines)
	if len(sp) != 1 || sp[0].Line != 5000 || sp[0].Title != "WARNING in napi_disable" || strings.Contains(sp[0].Report, "dev_close") {
		t.Errorf("splats %+v, want the WARNING at line 5000 ending at the gap", sp)
	}
}
