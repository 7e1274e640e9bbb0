package kernels

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestProgressCounter(t *testing.T) {
	hdr, body := readCapture(t, "testdata/kbuild-bzImage.log")
	wantObjects, err := strconv.Atoi(hdr["OBJECTS"])
	if err != nil {
		t.Fatal(err)
	}
	c := progressCounter{phase: PhaseCompile}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		before := c.phase
		c.feed(line)
		if before != c.phase && line != "  AR      vmlinux.a" {
			t.Errorf("phase %s -> %s on %q, want the switch on AR vmlinux.a", before, c.phase, line)
		}
	}
	if c.objects != wantObjects || c.phase != hdr["PHASE"] {
		t.Errorf("objects, phase = %d, %s; want %d, %s", c.objects, c.phase, wantObjects, hdr["PHASE"])
	}
}

func TestProgressCounterLines(t *testing.T) {
	tests := []struct {
		line    string
		objects int
		phase   string
	}{
		{"  CC      kernel/fork.o", 1, PhaseCompile},
		{"  AS      arch/x86/entry/entry_64.o", 1, PhaseCompile},
		{"  CC      /root/work/tools/objtool/check.o", 1, PhaseCompile},
		{"  HOSTCC  scripts/kallsyms", 0, PhaseCompile},
		{"  CC      arch/x86/entry/vdso/vdso-image-64.c", 0, PhaseCompile},
		{"  AR      kernel/built-in.a", 0, PhaseCompile},
		{"  LD      arch/x86/realmode/rm/realmode.elf", 0, PhaseCompile},
		{"kernel/fork.c:12:1: error: CC kernel/fork.o", 0, PhaseCompile},
		{"  LD      vmlinux.o", 0, PhaseLink},
		{"  LD      .tmp_vmlinux.kallsyms1", 0, PhaseLink},
		{"  BUILD   arch/x86/boot/bzImage", 0, PhaseLink},
	}
	for _, tc := range tests {
		c := progressCounter{phase: PhaseCompile}
		c.feed(tc.line)
		if c.objects != tc.objects || c.phase != tc.phase {
			t.Errorf("feed(%q): objects, phase = %d, %s; want %d, %s", tc.line, c.objects, c.phase, tc.objects, tc.phase)
		}
	}
}

func TestTail(t *testing.T) {
	tl := newTail(3)
	if got := tl.get(); len(got) != 0 {
		t.Errorf("empty tail = %q", got)
	}
	for i := 1; i <= 2; i++ {
		tl.add(strconv.Itoa(i))
	}
	if got, want := tl.get(), []string{"1", "2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tail = %q, want %q", got, want)
	}
	for i := 3; i <= 7; i++ {
		tl.add(strconv.Itoa(i))
	}
	if got, want := tl.get(), []string{"5", "6", "7"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tail = %q, want %q", got, want)
	}
}
