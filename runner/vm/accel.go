package vm

import (
	"fmt"
	"os"
)

// PickAccel resolves "" (auto) to tcg unless NAPILAB_ACCEL says otherwise:
// on our hosts /dev/kvm opens but guests stall after the firmware, so KVM is
// used only when asked for.
func PickAccel(want string) (string, error) {
	if want == "" {
		want = os.Getenv("NAPILAB_ACCEL")
	}
	switch want {
	case "", "tcg":
		return "tcg", nil
	case "kvm":
		f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
		if err != nil {
			return "", fmt.Errorf("kvm asked for but /dev/kvm is not usable: %w", err)
		}
		f.Close()
		return "kvm", nil
	}
	return "", fmt.Errorf("unknown accelerator %q: want kvm or tcg", want)
}
