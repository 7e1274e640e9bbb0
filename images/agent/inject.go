package agent

// Race widening: a kprobe (or kretprobe) BPF program per probe busy-waits
// for a delay, with a probability and up to a count, while the probe is armed.
// A kprobe handler runs with preemption off, so the delay spins (a bounded
// loop over ktime); it cannot sleep. Decisions come from a per-CPU xorshift
// seeded from the run's seed, so a replay draws the same sequence per CPU.

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"napilab/internal/wire"
)

// injectCfg is one probe's settings in the cfg map (32 bytes).
type injectCfg struct {
	Armed     uint32
	Pad       uint32
	Threshold uint64 // fire when a 32-bit draw is below this (probability * 2^32)
	Delay     uint64 // nanoseconds to spin
	Limit     uint64 // most firings, 0 = no limit
}

// injectStats is one probe's counters (16 bytes).
type injectStats struct {
	Hits  uint64 // the probed function ran
	Fired uint64 // a delay was injected
}

// The spin is a bounded loop the verifier walks iteration by iteration: at
// most maxSpinLoops checks of the clock (it refuses more than 8192 branch
// states on one path), each after spinReads clock reads, so that the cap
// (65536 reads, about 13 ms at the 0.2 µs a read takes under TCG) stays
// above the 10 ms a scenario may ask for.
const (
	maxSpinLoops = 4096
	spinReads    = 16
)

// injector owns the probes of one run.
type injector struct {
	mu    sync.Mutex
	names []string
	cfg   *ebpf.Map
	stats *ebpf.Map
	rng   *ebpf.Map
	links []link.Link
	want  []injectCfg
}

// setup attaches every probe, armed or not; a symbol the kernel cannot probe
// is an error naming it.
func (in *injector) setup(args wire.Inject) error {
	_, err := in.attach(args, false)
	return err
}

// count attaches an unarmed probe on each function, to count its calls
// (the cover op), and returns the functions the kernel could not probe,
// each with why: those are left out, not an error.
func (in *injector) count(c wire.Cover) ([]string, error) {
	args := wire.Inject{}
	for _, f := range c.Funcs {
		args.Probes = append(args.Probes, wire.Probe{Name: f, At: f})
	}
	return in.attach(args, true)
}

// attach loads and attaches the probes; with skip, a probe the kernel
// refuses is reported in the list and left out instead of failing.
func (in *injector) attach(args wire.Inject, skip bool) ([]string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.names) > 0 {
		return nil, fmt.Errorf("probes already set up")
	}
	if err := raiseMemlock(); err != nil {
		return nil, err
	}
	if err := plainKprobes(); err != nil {
		return nil, err
	}
	var skipped []string
	n := uint32(len(args.Probes))
	var err error
	if in.cfg, err = ebpf.NewMap(&ebpf.MapSpec{Name: "napilab_icfg", Type: ebpf.Array, KeySize: 4, ValueSize: 32, MaxEntries: n}); err != nil {
		return nil, fmt.Errorf("failed to create the inject map: %w", err)
	}
	if in.stats, err = ebpf.NewMap(&ebpf.MapSpec{Name: "napilab_istat", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: n}); err != nil {
		return nil, fmt.Errorf("failed to create the inject stats map: %w", err)
	}
	if in.rng, err = ebpf.NewMap(&ebpf.MapSpec{Name: "napilab_irng", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("failed to create the inject rng: %w", err)
	}
	seeds := make([]uint64, runtime.NumCPU())
	for i := range seeds {
		seeds[i] = splitmix(uint64(args.Seed) + uint64(i)*0x9e3779b97f4a7c15)
	}
	if err := in.rng.Put(uint32(0), seeds); err != nil {
		return nil, fmt.Errorf("failed to seed the inject rng: %w", err)
	}
	for i, p := range args.Probes {
		c := injectCfg{Threshold: threshold(p.Probability), Delay: uint64(p.Delay.Nanoseconds()), Limit: uint64(p.Count)}
		if p.Armed {
			c.Armed = 1
		}
		if err := in.cfg.Put(uint32(i), c); err != nil {
			return nil, err
		}
		in.want = append(in.want, c)
		in.names = append(in.names, p.Name)
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "napilab_inject", Type: ebpf.Kprobe, License: "GPL",
			Instructions: in.program(uint32(i))})
		if err != nil {
			return nil, fmt.Errorf("failed to load the probe for %s: %w", p.At, err)
		}
		sym, off, err := splitAt(p.At)
		if err != nil {
			prog.Close()
			return nil, err
		}
		var l link.Link
		if p.Return {
			l, err = link.Kretprobe(sym, prog, nil)
		} else {
			l, err = link.Kprobe(sym, prog, &link.KprobeOptions{Offset: off})
		}
		prog.Close()
		if err != nil && skip {
			skipped = append(skipped, fmt.Sprintf("%s: %v", p.At, err))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("failed to probe %s (not a probeable kernel function?): %w", p.At, err)
		}
		in.links = append(in.links, l)
	}
	return skipped, nil
}

// arm switches a probe on or off.
func (in *injector) arm(a wire.InjectArm) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, n := range in.names {
		if n != a.Name {
			continue
		}
		c := in.want[i]
		c.Armed = 0
		if a.On {
			c.Armed = 1
		}
		in.want[i] = c
		return in.cfg.Put(uint32(i), c)
	}
	return fmt.Errorf("no inject probe %q", a.Name)
}

// read renders "name hits fired" lines, the inject sample source.
func (in *injector) read() (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var b strings.Builder
	for i, n := range in.names {
		var s injectStats
		if err := in.stats.Lookup(uint32(i), &s); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %d %d\n", n, s.Hits, s.Fired)
	}
	return b.String(), nil
}

// threshold turns a probability into the program's draw threshold.
func threshold(p float64) uint64 {
	return uint64(math.Round(min(max(p, 0), 1) * (1 << 32)))
}

// splitmix scrambles a seed so that neighbouring seeds draw apart.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31) | 1
}

// splitAt parses "symbol" or "symbol+offset" (decimal or 0x hex).
func splitAt(at string) (string, uint64, error) {
	sym, off, ok := strings.Cut(at, "+")
	if !ok {
		return sym, 0, nil
	}
	n, err := strconv.ParseUint(off, 0, 32)
	if err != nil {
		return "", 0, fmt.Errorf("bad offset in %q: %v", at, err)
	}
	return sym, n, nil
}

// program is the probe for entry idx of the maps.
func (in *injector) program(idx uint32) asm.Instructions {
	lookup := func(m *ebpf.Map, dst asm.Register) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.RFP, -16, int64(idx), asm.Word),
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -16),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(dst, asm.R0),
		}
	}
	var p asm.Instructions
	add := func(i ...asm.Instruction) { p = append(p, i...) }
	// hits++; R7 = stats, R8 = cfg.
	add(lookup(in.stats, asm.R7)...)
	add(asm.Mov.Imm(asm.R1, 1), asm.StoreXAdd(asm.R7, asm.R1, asm.DWord))
	add(lookup(in.cfg, asm.R8)...)
	add(asm.LoadMem(asm.R1, asm.R8, 0, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "out"),
		asm.LoadMem(asm.R1, asm.R8, 24, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "draw"),
		asm.LoadMem(asm.R2, asm.R7, 8, asm.DWord),
		asm.JGE.Reg(asm.R2, asm.R1, "out"))
	// Draw: xorshift64 on this CPU's state (R9).
	add(asm.StoreImm(asm.RFP, -16, 0, asm.Word).WithSymbol("draw"),
		asm.LoadMapPtr(asm.R1, in.rng.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -16),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R1), asm.LSh.Imm(asm.R2, 13), asm.Xor.Reg(asm.R1, asm.R2),
		asm.Mov.Reg(asm.R2, asm.R1), asm.RSh.Imm(asm.R2, 7), asm.Xor.Reg(asm.R1, asm.R2),
		asm.Mov.Reg(asm.R2, asm.R1), asm.LSh.Imm(asm.R2, 17), asm.Xor.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.RSh.Imm(asm.R1, 32),
		asm.LoadMem(asm.R2, asm.R8, 8, asm.DWord),
		asm.JGE.Reg(asm.R1, asm.R2, "out"))
	// fired++, then spin until now + delay. A bounded loop, not bpf_loop:
	// the lab kernels have no BPF JIT, and bpf_loop callbacks need one.
	add(asm.Mov.Imm(asm.R1, 1),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 8),
		asm.StoreXAdd(asm.R2, asm.R1, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R8, 16, asm.DWord),
		asm.Add.Reg(asm.R0, asm.R1),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.Mov.Imm(asm.R9, 0),
		asm.FnKtimeGetNs.Call().WithSymbol("spin"))
	for range spinReads - 1 {
		add(asm.FnKtimeGetNs.Call())
	}
	add(asm.JGE.Reg(asm.R0, asm.R6, "out"),
		asm.Add.Imm(asm.R9, 1),
		asm.JLT.Imm(asm.R9, maxSpinLoops, "spin"))
	add(asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return())
	return p
}
