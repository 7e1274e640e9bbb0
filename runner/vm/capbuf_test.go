package vm

import (
	"fmt"
	"testing"
)

// FuzzCapBuffer: whatever the writes, the buffer holds the first head and
// the last tail bytes of what was written, and counts the rest.
func FuzzCapBuffer(f *testing.F) {
	f.Add([]byte("abcdef0123456789XYZ"), uint8(4), uint8(8), uint8(3))
	f.Add([]byte(""), uint8(0), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, head, tail, chunk uint8) {
		if tail == 0 || chunk == 0 {
			return
		}
		b := newCapBuffer(int(head), int(tail))
		for p := data; len(p) > 0; {
			n := min(int(chunk), len(p))
			b.Write(p[:n])
			p = p[n:]
		}
		want := string(data)
		if len(data) > int(head)+int(tail) {
			dropped := len(data) - int(head) - int(tail)
			want = string(data[:head]) + fmt.Sprintf("\n--- napilab: %d bytes of QEMU's stderr not kept ---\n", dropped) + string(data[len(data)-int(tail):])
		}
		if got := b.String(); got != want {
			t.Errorf("head %d tail %d chunk %d: %q, want %q", head, tail, chunk, got, want)
		}
	})
}
