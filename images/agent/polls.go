package agent

// Who polled each NAPI: BPF programs on the napi:napi_poll tracepoint count
// polls and the packets they returned per NAPI, execution context, CPU and
// task. The programs are built with cilium/ebpf's assembler (no compiler in
// the image, no BTF in the lab kernels): they read the tracepoint records at
// the offsets tracefs gives.
//
// The context of a poll:
//   - softirq: NET_RX softirq on interrupt exit or bh enable (irq:softirq_entry
//     and _exit bracket it; a per-CPU flag says "in a softirq");
//   - ksoftirqd: the same softirq run by ksoftirqd/N;
//   - kthread: a napi/ (or 6.12 backlog_napi/) kthread, outside softirq;
//   - busypoll: any other task outside softirq (SO_BUSY_POLL, epoll busy poll).
//
// The NAPI's RX queue comes from the packets it returned: skb->queue_mapping
// at net:napi_gro_receive_entry between two polls on a CPU belongs to the poll
// that ends next. Drivers record the RX queue + 1 there (virtio-net); veth
// keeps the sender's TX queue, which is the RX queue's index. Frames an XDP
// program redirects (AF_XDP, devmap) never reach GRO: a kprobe on
// xdp_do_redirect reads their xdp->rxq->queue_index the same way.

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// Poll contexts as the program records them.
const (
	ctxSoftirq = iota
	ctxKsoftirqd
	ctxKthread
	ctxBusypoll
)

var ctxNames = []string{"softirq", "ksoftirqd", "kthread", "busypoll"}

// pollKey is the polls map key (24 bytes, as the program lays it out).
type pollKey struct {
	Napi uint64
	PID  uint32
	CPU  uint32
	Kind uint32
	Pad  uint32
}

// pollValue is the polls map value (48 bytes).
type pollValue struct {
	Polls uint64
	Work  uint64
	Poll  uint64   // the NAPI's poll function
	Queue uint32   // skb->queue_mapping of its last packet + 1, 0 unknown
	XDPQ  uint32   // RX queue + 1 of its last frame XDP redirected, 0 none
	Dev   [16]byte // device name from the tracepoint
}

// napiOffPoll returns offsetof(struct napi_struct, poll) for a kernel
// release (the guest has no BTF to ask): in 6.1 and 6.12 state (8),
// poll_list (16), weight (4), defer_hard_irqs_count (4), gro_bitmask (8);
// from 6.15 the GRO state moved into struct gro_node after poll, so 32 (read
// in 7.3.4). Check each new base.
func napiOffPoll(release string) int32 {
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err == nil && (major > 6 || major == 6 && minor >= 15) {
		return 32
	}
	return 40
}

// pollsMaxEntries bounds the polls map: NAPIs x CPUs x contexts x tasks.
const pollsMaxEntries = 8192

// pollCounter owns the programs and maps; start attaches them once.
type pollCounter struct {
	mu    sync.Mutex
	err   error // why starting failed, returned on every read
	on    bool
	polls *ebpf.Map
	state *ebpf.Map
	links []link.Link
	// gro and xdp read each packet's queue; they run per packet, the
	// costliest of the programs, so they are attached only while a NAPI
	// lacks its queue.
	gro, xdp         *ebpf.Program
	groLink, xdpLink link.Link
	syms             kallsyms
}

// start loads and attaches the programs on first use.
func (p *pollCounter) start() error {
	if p.on || p.err != nil {
		return p.err
	}
	p.err = p.attach()
	if p.err != nil {
		p.close()
		return p.err
	}
	p.on = true
	return nil
}

func (p *pollCounter) close() {
	for _, l := range p.links {
		l.Close()
	}
	p.links = nil
	p.closeQueues()
	for _, pr := range []**ebpf.Program{&p.gro, &p.xdp} {
		if *pr != nil {
			(*pr).Close()
			*pr = nil
		}
	}
	if p.polls != nil {
		p.polls.Close()
	}
	if p.state != nil {
		p.state.Close()
	}
}

func (p *pollCounter) attach() error {
	if err := raiseMemlock(); err != nil {
		return err
	}
	var err error
	// state, per CPU: [0] the softirq being served + 1 (0: none), [1] the
	// last queue_mapping seen since the CPU's last poll, [2] the last XDP
	// redirect's RX queue + 1.
	p.state, err = ebpf.NewMap(&ebpf.MapSpec{Name: "napilab_cpu", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 16, MaxEntries: 1})
	if err != nil {
		return fmt.Errorf("failed to create the per-CPU map: %w", err)
	}
	p.polls, err = ebpf.NewMap(&ebpf.MapSpec{Name: "napilab_polls", Type: ebpf.Hash, KeySize: 24, ValueSize: 48, MaxEntries: pollsMaxEntries})
	if err != nil {
		return fmt.Errorf("failed to create the polls map: %w", err)
	}
	type prog struct {
		group, event string
		build        func(map[string]eventField) (asm.Instructions, error)
	}
	for _, pr := range []prog{
		{"irq", "softirq_entry", p.softirqEntry},
		{"irq", "softirq_exit", p.softirqExit},
		{"net", "napi_gro_receive_entry", p.groEntry},
		{"napi", "napi_poll", p.napiPoll},
	} {
		fields, err := eventFormat(pr.group, pr.event)
		if err != nil {
			return err
		}
		insns, err := pr.build(fields)
		if err != nil {
			return err
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "napilab_" + pr.event[:min(len(pr.event), 8)],
			Type: ebpf.TracePoint, License: "GPL", Instructions: insns})
		if err != nil {
			return fmt.Errorf("failed to load the %s:%s program: %w", pr.group, pr.event, err)
		}
		if pr.event == "napi_gro_receive_entry" {
			p.gro = prog
			continue
		}
		l, err := link.Tracepoint(pr.group, pr.event, prog, nil)
		prog.Close() // the link holds it
		if err != nil {
			return fmt.Errorf("failed to attach to %s:%s: %w", pr.group, pr.event, err)
		}
		p.links = append(p.links, l)
	}
	p.xdp, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "napilab_xdp_redir", Type: ebpf.Kprobe, License: "GPL",
		Instructions: p.xdpRedirect()})
	if err != nil {
		return fmt.Errorf("failed to load the xdp_do_redirect program: %w", err)
	}
	return p.watchQueues(true)
}

// watchQueues attaches or detaches the per-packet queue programs.
func (p *pollCounter) watchQueues(on bool) error {
	switch {
	case on && p.groLink == nil:
		l, err := link.Tracepoint("net", "napi_gro_receive_entry", p.gro, nil)
		if err != nil {
			return fmt.Errorf("failed to attach to net:napi_gro_receive_entry: %w", err)
		}
		p.groLink = l
		// Without it XDP-redirected queues keep their rx@<address> names.
		// Attached once and kept until close: removing a kprobe while
		// packets run through it rewrote live text under a vCPU, which
		// under TCG kept running the removed int3 (the kernel's handler
		// backs up over a vanished probe and runs the byte again): the
		// NIC's poll never returned and napi_disable hung (seed 003,
		// stock-6.1, 1 run in 11). The probe is a plain int3 (plainKprobes).
		if p.xdpLink == nil && plainKprobes() == nil {
			p.xdpLink, _ = link.Kprobe("xdp_do_redirect", p.xdp, nil)
		}
	case !on && p.groLink != nil:
		p.groLink.Close()
		p.groLink = nil
	}
	return nil
}

// closeQueues detaches the per-packet programs, the kprobe included: only
// once the run's traffic is over (close).
func (p *pollCounter) closeQueues() {
	p.watchQueues(false)
	if p.xdpLink != nil {
		p.xdpLink.Close()
		p.xdpLink = nil
	}
}

// Offsets the xdp_do_redirect program reads (6.1 to 7.3): the second
// argument in pt_regs (rsi), xdp_buff.rxq, xdp_rxq_info.queue_index.
const (
	ptRegsSI        = 104
	xdpBuffRxq      = 32
	rxqInfoQueueIdx = 8
)

// xdpRedirect stores the redirected frame's RX queue + 1 in the CPU's
// state[2], as groEntry does with a packet's queue.
func (p *pollCounter) xdpRedirect() asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	insns = append(insns, p.lookupState("out")...)
	read := func(dst int16, size int32, from asm.Register, off int32) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, int32(dst)),
			asm.Mov.Imm(asm.R2, size),
			asm.Mov.Reg(asm.R3, from),
			asm.Add.Imm(asm.R3, off),
			asm.FnProbeReadKernel.Call(),
			asm.JNE.Imm(asm.R0, 0, "out"),
		}
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.StoreImm(asm.RFP, -16, 0, asm.DWord),
		asm.LoadMem(asm.R7, asm.R6, ptRegsSI, asm.DWord))
	insns = append(insns, read(-16, 8, asm.R7, xdpBuffRxq)...)
	insns = append(insns, asm.LoadMem(asm.R7, asm.RFP, -16, asm.DWord))
	insns = append(insns, read(-16, 4, asm.R7, rxqInfoQueueIdx)...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.RFP, -16, asm.Word),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R8, 8, asm.R1, asm.Word))
	return append(insns, exit("out")...)
}

// lookupState leaves the CPU's state value in R0 or returns; clobbers R1-R5.
func (p *pollCounter) lookupState(label string) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, -8, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, p.state.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, label),
	}
}

func exit(label string) asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, 0).WithSymbol(label), asm.Return()}
}

// softirqEntry records the vector a CPU starts serving.
func (p *pollCounter) softirqEntry(f map[string]eventField) (asm.Instructions, error) {
	fs, err := needFields("irq:softirq_entry", f, "vec")
	if err != nil {
		return nil, err
	}
	return p.stateFrom(fs[0], asm.Word, 0), nil
}

// stateFrom stores a record field + 1 (0 stays "none") at off in the CPU's state.
func (p *pollCounter) stateFrom(f eventField, size asm.Size, off int16) asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
	insns = append(insns, p.lookupState("out")...)
	insns = append(insns,
		asm.LoadMem(asm.R1, asm.R6, int16(f.offset), size),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, off, asm.R1, asm.Word),
	)
	return append(insns, exit("out")...)
}

// softirqExit clears the flag.
func (p *pollCounter) softirqExit(map[string]eventField) (asm.Instructions, error) {
	insns := p.lookupState("out")
	insns = append(insns, asm.StoreImm(asm.R0, 0, 0, asm.Word))
	return append(insns, exit("out")...), nil
}

// groEntry remembers the RX queue of a packet a poll is returning.
func (p *pollCounter) groEntry(f map[string]eventField) (asm.Instructions, error) {
	fs, err := needFields("net:napi_gro_receive_entry", f, "queue_mapping")
	if err != nil {
		return nil, err
	}
	if fs[0].size != 2 {
		return nil, fmt.Errorf("napi_gro_receive_entry queue_mapping is %d bytes, want 2", fs[0].size)
	}
	return p.stateFrom(fs[0], asm.Half, 4), nil
}

// Stack layout of napiPoll (offsets from R10).
const (
	stKey   = -24 // pollKey: napi -24, pid -16, cpu -12, kind -8
	stVal   = -72 // pollValue: polls -72, work -64, poll -56, queue -48, dev -40
	stComm  = -88 // 16 bytes of comm
	stZero  = -96 // a u32 0 for the array lookup
	stStack = 96
)

func le64(s string) int64 { return int64(binary.LittleEndian.Uint64([]byte(s))) }

// napiPoll counts one poll under its key.
func (p *pollCounter) napiPoll(f map[string]eventField) (asm.Instructions, error) {
	fs, err := needFields("napi:napi_poll", f, "napi", "dev_name", "work")
	if err != nil {
		return nil, err
	}
	napi, dev, work := fs[0], fs[1], fs[2]
	// The dev_name string follows the fixed fields; it is read when the
	// descriptor says it is there.
	strOff := 0
	for _, fl := range f {
		strOff = max(strOff, fl.offset+fl.size)
	}
	if napi.size != 8 || dev.size != 4 || work.size != 4 || strOff > 0xffff {
		return nil, fmt.Errorf("unexpected napi:napi_poll layout (napi %d bytes, dev_name %d, work %d, data at %d)",
			napi.size, dev.size, work.size, strOff)
	}
	var insns asm.Instructions
	add := func(i ...asm.Instruction) { insns = append(insns, i...) }
	add(asm.Mov.Reg(asm.R6, asm.R1))
	for off := int16(-stStack); off < 0; off += 8 {
		add(asm.StoreImm(asm.RFP, off, 0, asm.DWord))
	}
	// key.napi, and R7 = napi.
	add(asm.LoadMem(asm.R7, asm.R6, int16(napi.offset), asm.DWord),
		asm.StoreMem(asm.RFP, stKey, asm.R7, asm.DWord))
	// val.polls = 1, val.work = work.
	add(asm.StoreImm(asm.RFP, stVal, 1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, int16(work.offset), asm.Word),
		asm.StoreMem(asm.RFP, stVal+8, asm.R1, asm.DWord))
	// val.dev from the record when the descriptor points where we read.
	add(asm.LoadMem(asm.R1, asm.R6, int16(dev.offset), asm.Word),
		asm.And.Imm(asm.R1, 0xffff),
		asm.JNE.Imm(asm.R1, int32(strOff), "noname"))
	// Not a context load: the kernel refuses a tracepoint program that reads
	// its context past the fixed fields (perf_event_set_bpf_prog).
	add(asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stVal+32),
		asm.Mov.Imm(asm.R2, 16),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, int32(strOff)),
		asm.FnProbeReadKernelStr.Call())
	// val.poll = napi->poll.
	add(asm.Mov.Reg(asm.R1, asm.RFP).WithSymbol("noname"),
		asm.Add.Imm(asm.R1, stVal+16),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, napiOffPoll(release())),
		asm.FnProbeReadKernel.Call())
	// key.cpu.
	add(asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(asm.RFP, stKey+12, asm.R0, asm.Word))
	// R8 = per-CPU state; R9 = softirq flag; val.queue = state[1], then clear it.
	add(asm.LoadMapPtr(asm.R1, p.state.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stZero),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.LoadMem(asm.R9, asm.R8, 0, asm.Word),
		asm.LoadMem(asm.R1, asm.R8, 4, asm.Word),
		asm.StoreMem(asm.RFP, stVal+24, asm.R1, asm.Word),
		asm.StoreImm(asm.R8, 4, 0, asm.Word),
		asm.LoadMem(asm.R1, asm.R8, 8, asm.Word),
		asm.StoreMem(asm.RFP, stVal+28, asm.R1, asm.Word),
		asm.StoreImm(asm.R8, 8, 0, asm.Word))
	// comm and pid (R7 = pid; napi no longer needed).
	add(asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stComm),
		asm.Mov.Imm(asm.R2, 16),
		asm.FnGetCurrentComm.Call(),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg32(asm.R7, asm.R0))
	// Classify.
	add(asm.LoadMem(asm.R1, asm.RFP, stComm, asm.DWord),
		asm.JEq.Imm(asm.R9, 0, "task"),
		asm.LoadImm(asm.R2, le64("ksoftirq"), asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R2, "ksoftirqd"),
		asm.StoreImm(asm.RFP, stKey+16, ctxSoftirq, asm.Word),
		asm.Ja.Label("count"),
		asm.StoreImm(asm.RFP, stKey+16, ctxKsoftirqd, asm.Word).WithSymbol("ksoftirqd"),
		asm.StoreMem(asm.RFP, stKey+8, asm.R7, asm.Word),
		asm.Ja.Label("count"),
		// Outside softirq: napi/ and backlog_napi/ kthreads, or a task.
		asm.StoreMem(asm.RFP, stKey+8, asm.R7, asm.Word).WithSymbol("task"),
		asm.LoadImm(asm.R2, le64("backlog_"), asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R2, "kthread"),
		asm.LoadImm(asm.R2, 0xffffffffff, asm.DWord),
		asm.And.Reg(asm.R1, asm.R2),
		asm.LoadImm(asm.R2, le64("napi/\x00\x00\x00"), asm.DWord),
		asm.JEq.Reg(asm.R1, asm.R2, "kthread"),
		asm.StoreImm(asm.RFP, stKey+16, ctxBusypoll, asm.Word),
		asm.Ja.Label("count"),
		asm.StoreImm(asm.RFP, stKey+16, ctxKthread, asm.Word).WithSymbol("kthread"))
	// Count: add to an existing entry or insert the initial value.
	add(asm.LoadMapPtr(asm.R1, p.polls.FD()).WithSymbol("count"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "found"),
		asm.LoadMapPtr(asm.R1, p.polls.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stKey),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stVal),
		asm.Mov.Imm(asm.R4, 1), // BPF_NOEXIST
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("out"),
		asm.Mov.Imm(asm.R1, 1).WithSymbol("found"),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stVal+8, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.Add.Imm(asm.R2, 8),
		asm.StoreXAdd(asm.R2, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stVal+16, asm.DWord),
		asm.StoreMem(asm.R0, 16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stVal+24, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "sameq"),
		asm.StoreMem(asm.R0, 24, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, stVal+28, asm.Word).WithSymbol("sameq"),
		asm.JEq.Imm(asm.R1, 0, "samexq"),
		asm.StoreMem(asm.R0, 28, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, stVal+32, asm.DWord).WithSymbol("samexq"),
		asm.StoreMem(asm.R0, 32, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, stVal+40, asm.DWord),
		asm.StoreMem(asm.R0, 40, asm.R1, asm.DWord))
	return append(insns, exit("out")...), nil
}

// pollEntry is one map entry with its NAPI named.
type pollEntry struct {
	key pollKey
	val pollValue
	dev string
}

// read renders the counters as lines "dev napi context cpu pid polls packets".
func (p *pollCounter) read() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.start(); err != nil {
		return "", err
	}
	var entries []pollEntry
	var k pollKey
	var v pollValue
	it := p.polls.Iterate()
	for it.Next(&k, &v) {
		dev := string(v.Dev[:])
		if i := strings.IndexByte(dev, 0); i >= 0 {
			dev = dev[:i]
		}
		if dev == "" || strings.ContainsAny(dev, " \t\n") {
			dev = "?"
		}
		entries = append(entries, pollEntry{k, v, dev})
	}
	if err := it.Err(); err != nil {
		return "", fmt.Errorf("failed to read the polls map: %w", err)
	}
	names, unnamed := p.nameNAPIs(entries)
	if err := p.watchQueues(unnamed); err != nil {
		return "", err
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.dev != b.dev {
			return a.dev < b.dev
		}
		if na, nb := names[a.key.Napi], names[b.key.Napi]; na != nb {
			return na < nb
		}
		if a.key.Kind != b.key.Kind {
			return a.key.Kind < b.key.Kind
		}
		if a.key.CPU != b.key.CPU {
			return a.key.CPU < b.key.CPU
		}
		return a.key.PID < b.key.PID
	})
	var b strings.Builder
	for _, e := range entries {
		kind := "?"
		if int(e.key.Kind) < len(ctxNames) {
			kind = ctxNames[e.key.Kind]
		}
		fmt.Fprintf(&b, "%s %s %s %d %d %d %d\n", e.dev, names[e.key.Napi], kind, e.key.CPU, e.key.PID, e.val.Polls, e.val.Work)
	}
	return b.String(), nil
}

// nameNAPIs names every NAPI pointer: rx-<queue> from the packets it
// returned (or the frames XDP redirected), backlog for the per-CPU backlog, otherwise <role>@<address>;
// unnamed says whether an RX NAPI still waits for its queue.
func (p *pollCounter) nameNAPIs(entries []pollEntry) (names map[uint64]string, unnamed bool) {
	queue, xdpq := map[uint64]uint32{}, map[uint64]uint32{}
	poll := map[uint64]uint64{}
	for _, e := range entries {
		if e.val.Queue > 0 {
			queue[e.key.Napi] = e.val.Queue
		}
		if e.val.XDPQ > 0 {
			xdpq[e.key.Napi] = e.val.XDPQ
		}
		poll[e.key.Napi] = e.val.Poll
	}
	names = map[uint64]string{}
	for napi, fn := range poll {
		sym := p.syms.name(fn)
		switch {
		case sym == "process_backlog":
			names[napi] = "backlog"
		case sym == "veth_poll" && queue[napi] > 0:
			names[napi] = fmt.Sprintf("rx-%d", queue[napi]-1)
		case queue[napi] > 1 && !strings.Contains(sym, "_tx"):
			names[napi] = fmt.Sprintf("rx-%d", queue[napi]-2)
		case strings.Contains(sym, "_tx"):
			names[napi] = fmt.Sprintf("tx@%x", napi&0xffffff)
		case xdpq[napi] > 0:
			names[napi] = fmt.Sprintf("rx-%d", xdpq[napi]-1)
		default:
			names[napi] = fmt.Sprintf("rx@%x", napi&0xffffff)
			unnamed = true
		}
	}
	return names, unnamed
}
