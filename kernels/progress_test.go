package kernels

import (
	"os"
	"path/filepath"
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
		// 6.16+ builds the early startup code under arch/x86/boot/startup
		// with everything else: compiling, not the link.
		{"  OBJCOPY arch/x86/boot/startup/gdt_idt.pi.o", 0, PhaseCompile},
		{"  AR      arch/x86/boot/startup/lib.a", 0, PhaseCompile},
		{"  OBJCOPY arch/x86/boot/compressed/vmlinux.bin", 0, PhaseLink},
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

func TestEstimateObjects(t *testing.T) {
	// artifact writes a published build's build.json under kernels/.
	artifact := func(t *testing.T, l layout, dir, spec string, objects int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(l.kernelsDir(), dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeJSON(filepath.Join(l.kernelsDir(), dir, buildInfoFile), BuildInfo{Spec: spec, Objects: objects}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		spec  Spec // Name is stock
		setup func(t *testing.T, l layout, work string)
		want  int
	}{
		{"never built", Spec{}, func(*testing.T, layout, string) {}, 0},
		{"never built, a Debian base", Spec{Base: Base{Package: "linux-source-6.12"}},
			func(*testing.T, layout, string) {}, typicalObjects["linux-source-6.12"]},
		{"never built, its debug flavour", Spec{Base: Base{Package: "linux-source-6.1"}, Config: Config{Debug: true}},
			func(*testing.T, layout, string) {}, typicalObjects["linux-source-6.1.debug"]},
		{"never built, its kselftest flavour", Spec{Base: Base{Package: "linux-source-7.3"}, Config: Config{Selftests: []string{"net"}}},
			func(*testing.T, layout, string) {}, typicalObjects["linux-source-7.3.kselftest-net"]},
		{"never built, a config of its own", Spec{Base: Base{Package: "linux-source-6.1"}, Config: Config{Base: "defconfig"}},
			func(*testing.T, layout, string) {}, 0},
		{"built: its own count wins", Spec{Base: Base{Package: "linux-source-6.1"}}, func(t *testing.T, l layout, _ string) {
			artifact(t, l, "stock-0123456789abcdef", "stock", 1202)
		}, 1202},
		{"largest build of the spec", Spec{}, func(t *testing.T, l layout, _ string) {
			artifact(t, l, "stock-0123456789abcdef", "stock", 1202)
			artifact(t, l, "stock-fedcba9876543210", "stock", 40) // an incremental rebuild
			artifact(t, l, "other-0123456789abcdef", "other", 5000)
			artifact(t, l, "stock-x-0123456789abcdef", "stock-x", 9000) // shares the prefix only
		}, 1202},
		{"damaged build.json skipped", Spec{}, func(t *testing.T, l layout, _ string) {
			artifact(t, l, "stock-0123456789abcdef", "stock", 1202)
			if err := os.MkdirAll(filepath.Join(l.kernelsDir(), "stock-1111111111111111"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(l.kernelsDir(), "stock-1111111111111111", buildInfoFile), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 1202},
		{"work dir already linked: incremental", Spec{Base: Base{Package: "linux-source-6.1"}}, func(t *testing.T, l layout, work string) {
			artifact(t, l, "stock-0123456789abcdef", "stock", 1202)
			if err := os.WriteFile(filepath.Join(work, "vmlinux"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := layout{t.TempDir()}
			work := l.workDir("stock")
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, l, work)
			if strings.HasPrefix(tc.name, "never built, its") && tc.want == 0 {
				t.Fatalf("no typical count for %q", typicalKey(&tc.spec))
			}
			tc.spec.Name = "stock"
			if got := estimateObjects(l, &tc.spec, work); got != tc.want {
				t.Errorf("estimateObjects = %d, want %d", got, tc.want)
			}
		})
	}
}
