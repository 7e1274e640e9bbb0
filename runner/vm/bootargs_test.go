package vm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"napilab/kernels"
)

func TestLpjFor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		khz, hz int64
		want    string
	}{
		{"HZ=1000", 2096010, 1000, "lpj=2096010"},
		{"HZ=250", 2096010, 250, "lpj=8384040"},
		{"no TSC rate", 0, 1000, ""},
		{"no HZ", 2096010, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lpjFor(tc.khz, tc.hz); got != tc.want {
				t.Errorf("lpjFor(%d, %d) = %q, want %q", tc.khz, tc.hz, got, tc.want)
			}
		})
	}
}

func TestConstantTSC(t *testing.T) {
	for _, tc := range []struct {
		name, cpuinfo string
		want          bool
	}{
		{"constant", "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n", true},
		{"last flag", "flags\t\t: fpu tsc constant_tsc\n", true},
		{"variable", "flags\t\t: fpu tsc\n", false},
		{"a longer flag only", "flags\t\t: fpu constant_tsc_x\n", false},
		{"no flags line", "processor\t: 0\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := constantTSC(tc.cpuinfo); got != tc.want {
				t.Errorf("constantTSC = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMeasureTSCkHz: a rate no x86 host has means the ticks or the clock
// readings are wrong.
func TestMeasureTSCkHz(t *testing.T) {
	if rdtsc() == 0 {
		t.Skip("no TSC on this architecture")
	}
	khz := measureTSCkHz(20 * time.Millisecond)
	if khz == 0 {
		t.Skip("every TSC reading was preempted")
	}
	if khz < 100_000 || khz > 10_000_000 {
		t.Errorf("TSC at %d kHz, want 100 MHz to 10 GHz", khz)
	}
}

func TestNo5lvl(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         bool
	}{
		{"5-level kernel (7.x)", "CONFIG_HZ=1000\nCONFIG_PGTABLE_LEVELS=5\n", true},
		{"4-level kernel (6.x)", "CONFIG_HZ=1000\nCONFIG_PGTABLE_LEVELS=4\n", false},
		{"no config", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bz := filepath.Join(dir, "bzImage")
			if tc.config != "" {
				os.WriteFile(filepath.Join(dir, "config"), []byte(tc.config), 0o644)
			}
			kc, _ := kernels.ReadConfig(bz)
			if got := slices.Contains(BootTuning(kc), "no5lvl"); got != tc.want {
				t.Errorf("no5lvl in the tuning: %v, want %v", got, tc.want)
			}
		})
	}
}
