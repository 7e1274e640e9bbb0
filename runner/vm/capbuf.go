package vm

import (
	"fmt"
	"sync"
)

// QEMU's stderr is kept up to these bounds: its first qemuStderrHead bytes
// (why it did not start) and its last qemuStderrTail (why it ended).
const (
	qemuStderrHead = 64 << 10
	qemuStderrTail = 1 << 20
)

// capBuffer is an io.Writer that keeps the first head and the last tail
// bytes written to it and counts the rest.
type capBuffer struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte // a ring once full: next is where the oldest byte is
	next    int
	full    bool
	dropped int64
	headMax int
	tailMax int
}

func newCapBuffer(head, tail int) *capBuffer {
	return &capBuffer{headMax: head, tailMax: tail}
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if !b.full {
			k := min(b.tailMax-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			if len(b.tail) == b.tailMax {
				b.full = true
			}
			continue
		}
		// Overwrite the oldest bytes of the ring.
		k := min(b.tailMax-b.next, len(p))
		copy(b.tail[b.next:], p[:k])
		b.dropped += int64(k)
		b.next = (b.next + k) % b.tailMax
		p = p[k:]
	}
	return n, nil
}

// String is the head, a marker of what was not kept, and the tail.
func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := string(b.head)
	if b.dropped > 0 {
		s += fmt.Sprintf("\n--- napilab: %d bytes of QEMU's stderr not kept ---\n", b.dropped)
	}
	return s + string(b.tail[b.next:]) + string(b.tail[:b.next])
}
