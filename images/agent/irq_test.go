package agent

import (
	"os"
	"reflect"
	"regexp"
	"testing"
)

func TestParseInterrupts(t *testing.T) {
	b, err := os.ReadFile("testdata/interrupts-6.1") // a 2-CPU 6.1 guest with a 2-queue virtio-net
	if err != nil {
		t.Fatal(err)
	}
	got := parseInterrupts(string(b))
	want := []irqLine{
		{0, []string{"timer"}}, {1, []string{"i8042"}}, {4, []string{"ttyS0"}}, {9, []string{"acpi"}},
		{12, []string{"i8042"}}, {24, []string{"virtio0-config"}}, {25, []string{"virtio0-virtqueues"}},
		{26, []string{"virtio1-config"}}, {27, []string{"virtio1-input"}}, {28, []string{"virtio2-config"}},
		{29, []string{"virtio2-input.0"}}, {30, []string{"virtio2-output.0"}},
		{31, []string{"virtio2-input.1"}}, {32, []string{"virtio2-output.1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseInterrupts:\n got %v\nwant %v", got, want)
	}
}

func TestParseInterruptsShared(t *testing.T) {
	// A shared line lists its actions with ", ".
	got := parseInterrupts("           CPU0       CPU1\n" +
		" 11:          5          0   IO-APIC  11-fasteoi   uhci_hcd:usb1, virtio3-input\n" +
		"ERR:          0\n")
	want := []irqLine{{11, []string{"uhci_hcd:usb1", "virtio3-input"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestMatchIRQs(t *testing.T) {
	b, err := os.ReadFile("testdata/interrupts-6.1")
	if err != nil {
		t.Fatal(err)
	}
	lines := parseInterrupts(string(b))
	for _, tc := range []struct {
		name, match string
		want        []int
	}{
		{"rx queues", `virtio2-input`, []int{29, 31}},
		{"one queue", `^virtio2-input\.0$`, []int{29}},
		{"all of a device", `^virtio2-`, []int{28, 29, 30, 31, 32}},
		{"shared name", `i8042`, []int{1, 12}},
		{"none", `eth0`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchIRQs(lines, regexp.MustCompile(tc.match)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("matchIRQs(%q) = %v, want %v", tc.match, got, tc.want)
			}
		})
	}
}
