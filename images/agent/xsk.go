package agent

// An AF_XDP socket over golang.org/x/sys/unix. No maintained Go AF_XDP
// library is served by the module proxy (asavie/xdp and slavc/xdp are not),
// and the lab needs only a small part of one: a UMEM, the four rings, bind
// to one queue in copy or zero-copy mode, and the kicks.

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UMEM and ring geometry. Every frame cycles fill -> rx -> (tx ->
// completion ->) fill, so the fill and completion rings hold all of them.
const (
	xskFrameSize = 2048 // XDP_UMEM_MIN_CHUNK_SIZE: one frame per chunk, no headroom
	xskFrames    = 2048
	xskRingSize  = 1024 // rx and tx
)

// ring is one AF_XDP ring shared with the kernel: a producer and a consumer
// index that only grow (u32, wrapping), a flags word, and size entries
// addressed by index & mask. Each side caches the other's index.
type ring struct {
	producer *uint32
	consumer *uint32
	flags    *uint32
	descs    unsafe.Pointer
	mask     uint32
	size     uint32
	mem      []byte // the mapping, nil for a ring over test memory
}

// newRing lays a ring over mem at the kernel's offsets; size is a power of two.
func newRing(mem []byte, off unix.XDPRingOffset, size uint32) *ring {
	base := unsafe.Pointer(unsafe.SliceData(mem))
	return &ring{
		producer: (*uint32)(unsafe.Add(base, off.Producer)),
		consumer: (*uint32)(unsafe.Add(base, off.Consumer)),
		flags:    (*uint32)(unsafe.Add(base, off.Flags)),
		descs:    unsafe.Add(base, off.Desc),
		mask:     size - 1,
		size:     size,
	}
}

// ringEntries is how many entries sit between cons and prod; u32
// subtraction stays right across the wrap.
func ringEntries(prod, cons uint32) uint32 { return prod - cons }

// ringFree is how many entries a producer at prod may still add.
func ringFree(prod, cons, size uint32) uint32 { return size - (prod - cons) }

// The kernel is the other side: atomics order the index stores after the
// entries they publish (Go's atomics are sequentially consistent).

// ready returns the first index a consumer may read and how many, at most n.
func (r *ring) ready(n uint32) (uint32, uint32) {
	cons := atomic.LoadUint32(r.consumer)
	return cons, min(n, ringEntries(atomic.LoadUint32(r.producer), cons))
}

// release gives back n entries a consumer has read.
func (r *ring) release(n uint32) { atomic.StoreUint32(r.consumer, atomic.LoadUint32(r.consumer)+n) }

// reserve returns the first index a producer may write and how many, at most n.
func (r *ring) reserve(n uint32) (uint32, uint32) {
	prod := atomic.LoadUint32(r.producer)
	return prod, min(n, ringFree(prod, atomic.LoadUint32(r.consumer), r.size))
}

// submit publishes n entries a producer has written.
func (r *ring) submit(n uint32) { atomic.StoreUint32(r.producer, atomic.LoadUint32(r.producer)+n) }

// needWakeup says whether the kernel asked for a kick (XDP_USE_NEED_WAKEUP).
func (r *ring) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// addr is entry i of a fill or completion ring (a UMEM offset).
func (r *ring) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.descs, uintptr(i&r.mask)*8))
}

// desc is entry i of an rx or tx ring.
func (r *ring) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.descs, uintptr(i&r.mask)*unsafe.Sizeof(unix.XDPDesc{})))
}

// xsk is an AF_XDP socket bound to one queue, with its UMEM and rings.
type xsk struct {
	fd       int
	umem     []byte
	fill, cq *ring
	rx, tx   *ring
	zeroCopy bool // bound with XDP_ZEROCOPY
}

// xskConfig is what openXSK binds.
type xskConfig struct {
	ifindex  int
	queue    int
	zeroCopy bool
}

// errZeroCopy wraps a bind the driver refused in zero-copy mode.
var errZeroCopy = errors.New("zero-copy bind refused")

// openXSK creates the socket in the calling thread's netns, registers the
// UMEM, maps the rings and binds. A zero-copy bind the driver refuses
// returns an error wrapping errZeroCopy, so the caller can retry in copy
// mode on a fresh socket.
func openXSK(cfg xskConfig) (*xsk, error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket(AF_XDP): %w", err)
	}
	x := &xsk{fd: fd}
	if err := x.setup(cfg); err != nil {
		x.close()
		return nil, err
	}
	return x, nil
}

func (x *xsk) setup(cfg xskConfig) error {
	var err error
	x.umem, err = unix.Mmap(-1, 0, xskFrames*xskFrameSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap umem: %w", err)
	}
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(x.umem)))),
		Len:  uint64(len(x.umem)),
		Size: xskFrameSize,
	}
	if err := setsockopt(x.fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("XDP_UMEM_REG: %w", err)
	}
	for _, o := range []struct {
		opt  int
		size uint32
	}{
		{unix.XDP_UMEM_FILL_RING, xskFrames}, {unix.XDP_UMEM_COMPLETION_RING, xskFrames},
		{unix.XDP_RX_RING, xskRingSize}, {unix.XDP_TX_RING, xskRingSize},
	} {
		if err := unix.SetsockoptInt(x.fd, unix.SOL_XDP, o.opt, int(o.size)); err != nil {
			return fmt.Errorf("ring size (opt %d): %w", o.opt, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := getsockopt(x.fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return fmt.Errorf("XDP_MMAP_OFFSETS: %w", err)
	}
	if x.fill, err = x.mapRing(off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, xskFrames, 8); err != nil {
		return err
	}
	if x.cq, err = x.mapRing(off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, xskFrames, 8); err != nil {
		return err
	}
	descSize := uint64(unsafe.Sizeof(unix.XDPDesc{}))
	if x.rx, err = x.mapRing(off.Rx, unix.XDP_PGOFF_RX_RING, xskRingSize, descSize); err != nil {
		return err
	}
	if x.tx, err = x.mapRing(off.Tx, unix.XDP_PGOFF_TX_RING, xskRingSize, descSize); err != nil {
		return err
	}
	x.fillAll()
	flags := uint16(unix.XDP_USE_NEED_WAKEUP | unix.XDP_COPY)
	if cfg.zeroCopy {
		flags = unix.XDP_USE_NEED_WAKEUP | unix.XDP_ZEROCOPY
	}
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(cfg.ifindex), QueueID: uint32(cfg.queue)}
	if err := unix.Bind(x.fd, sa); err != nil {
		if cfg.zeroCopy {
			return fmt.Errorf("bind queue %d: %w: %w", cfg.queue, errZeroCopy, err)
		}
		return fmt.Errorf("bind queue %d in copy mode: %w", cfg.queue, err)
	}
	x.zeroCopy = cfg.zeroCopy
	return nil
}

// mapRing maps one ring: its entries end at Desc + size*descSize.
func (x *xsk) mapRing(off unix.XDPRingOffset, pgoff int64, size uint32, descSize uint64) (*ring, error) {
	mem, err := unix.Mmap(x.fd, pgoff, int(off.Desc+uint64(size)*descSize),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap ring at %#x: %w", pgoff, err)
	}
	r := newRing(mem, off, size)
	r.mem = mem
	return r, nil
}

// fillAll hands every frame to the kernel for receiving.
func (x *xsk) fillAll() {
	i, n := x.fill.reserve(xskFrames)
	for k := range n {
		*x.fill.addr(i + k) = uint64(k) * xskFrameSize
	}
	x.fill.submit(n)
}

// frame returns the UMEM bytes of a descriptor.
func (x *xsk) frame(d *unix.XDPDesc) []byte {
	return x.umem[d.Addr : d.Addr+uint64(d.Len)]
}

// kickRx asks the kernel to work on rx: recvfrom with MSG_DONTWAIT (AF_XDP
// refuses a blocking one) busy-polls the NAPI when SO_BUSY_POLL is set and
// wakes the driver when the fill ring needs it.
func (x *xsk) kickRx() error {
	_, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return kickErr(e)
}

// kickTx has the kernel send what the tx ring holds; in copy mode only
// sendto (or poll) transmits, a batch at a time.
func (x *xsk) kickTx() error {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(x.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return kickErr(e)
}

// kickErr drops the errnos that only mean "not now": the next pass kicks again.
func kickErr(e unix.Errno) error {
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.ENETDOWN, unix.EINTR:
		return nil
	}
	return e
}

// stats reads XDP_STATISTICS.
func (x *xsk) stats() (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	err := getsockopt(x.fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
	return st, err
}

// close unmaps the rings and the UMEM and closes the socket.
func (x *xsk) close() {
	for _, r := range []*ring{x.fill, x.cq, x.rx, x.tx} {
		if r != nil && r.mem != nil {
			unix.Munmap(r.mem)
		}
	}
	unix.Close(x.fd)
	if x.umem != nil {
		unix.Munmap(x.umem)
	}
}

// setsockopt and getsockopt pass a struct at SOL_XDP: x/sys/unix has no
// typed helpers for the XDP ones.
func setsockopt(fd, opt int, p unsafe.Pointer, size uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), size, 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockopt(fd, opt int, p unsafe.Pointer, size uintptr) error {
	n := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return e
	}
	return nil
}
