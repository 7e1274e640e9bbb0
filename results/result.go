// Package results is the lab's result model: verdicts, assertion outcomes,
// the kernel splats and kselftests a run found, its figures, and the run
// folder (result.json, samples.jsonl). It knows nothing of VMs.
//
// Its subpackages import it, never the reverse: splat finds kernel reports
// in guest text, metrics parses sampled sources and metric names, stats
// compares runs, and report writes JUnit, KTAP, KCIDB and HTML.
//
//	r := &results.Result{Scenario: "x", Verdict: results.Pass}
//	err := r.Write(dir)
package results

import (
	"encoding/json"
	"fmt"
	"napilab/internal/safefs"
	"napilab/internal/wire"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Verdict is the outcome of a run.
type Verdict string

// Verdicts, from best to worst (Worse orders them); ExitCode maps them to
// the CLI's exit codes.
const (
	Pass Verdict = "PASS" // every assertion held, no splat
	// Inconclusive: the runs do not allow a decision (a performance budget
	// whose difference the run-to-run noise hides); the kernel is neither
	// cleared nor implicated, and the result says how many runs would decide.
	Inconclusive Verdict = "INCONCLUSIVE"
	Fail         Verdict = "FAIL"  // the kernel or the scenario's assertions failed
	Error        Verdict = "ERROR" // the lab or the host failed; says nothing about the kernel
)

// ExitCode is 0 for PASS, 1 for FAIL, 2 for ERROR and 3 for INCONCLUSIVE.
func (v Verdict) ExitCode() int {
	switch v {
	case Pass:
		return 0
	case Fail:
		return 1
	case Inconclusive:
		return 3
	}
	return 2
}

// Worse reports whether v is a worse outcome than w: PASS < INCONCLUSIVE <
// FAIL < ERROR (exit codes do not sort that way).
func (v Verdict) Worse(w Verdict) bool { return v.rank() > w.rank() }

func (v Verdict) rank() int {
	switch v {
	case Pass:
		return 0
	case Inconclusive:
		return 1
	case Fail:
		return 2
	}
	return 3
}

// Result is everything a run found out.
type Result struct {
	Scenario     string            `json:"scenario"`
	ScenarioFile string            `json:"scenario_file"`
	Params       map[string]string `json:"params,omitempty"`
	Seed         int64             `json:"seed"` // the timeline's jitter seed; set it in the scenario to replay
	Kernel       Kernel            `json:"kernel"`
	Image        string            `json:"image"` // initramfs sha256
	Accel        string            `json:"accel"` // kvm or tcg
	QEMU         string            `json:"qemu"`  // the exact command line
	Verdict      Verdict           `json:"verdict"`
	Reasons      []string          `json:"reasons,omitempty"` // why not PASS, one line each
	Started      time.Time         `json:"started"`
	Timings      Timings           `json:"timings"`
	Asserts      []Assert          `json:"asserts"`
	Steps        []Step            `json:"steps"`
	// Knobs are the changes the timeline made to NAPI state, in the order
	// they were issued: what results/model replays into expected states.
	Knobs []Knob `json:"knobs,omitempty"`
	Loads []Load `json:"loads,omitempty"`
	// Figures are the run's numbers for comparisons: metric deltas ("softirqs.NET_RX"),
	// rates ("…/s"), load rates ("flood.rx_pps"), latencies ("rr.p99_us") and who
	// polled ("napi.polls.eth0.rx-0.kthread", kept where polls happened; read
	// them with FigureValue).
	Figures map[string]float64 `json:"figures,omitempty"`
	Splats  []Splat            `json:"splats,omitempty"`
	Hang    *Hang              `json:"hang,omitempty"`
	// Polls says who polled each NAPI over time (the napi_polls sampler).
	Polls []PollSeries `json:"polls,omitempty"`
	// Injections are the race-widening probes and how often they fired.
	Injections []Injection `json:"injections,omitempty"`
	// Coverage counts the calls of the functions the kernel's series
	// changes, when it has one.
	Coverage *Coverage `json:"coverage,omitempty"`
	// Kselftests are the upstream selftests the run's kselftest steps ran.
	Kselftests []Kselftest `json:"kselftests,omitempty"`
	// Devices are the guest's network devices after setup and at the end.
	Devices     map[string][]wire.Device `json:"devices,omitempty"`
	ConsoleTail string                   `json:"console_tail,omitempty"`
	// Flaky says the run passed where the run it retried (RetryOf) failed
	// on timing-only assertions.
	Flaky bool `json:"flaky,omitempty"`
	// RetryOf is the failed run this run repeated; RetriedIn is the folder
	// of this run's own retry.
	RetryOf   *Retry `json:"retry_of,omitempty"`
	RetriedIn string `json:"retried_in,omitempty"`
	// Dropped is the guest output the lab read but did not keep; nil when
	// it kept everything.
	Dropped *Dropped `json:"dropped,omitempty"`
}

// Dropped counts guest output beyond the lab's bounds. A flood alone is not
// a kernel fault; the counts say how much evidence was lost and where.
type Dropped struct {
	ConsoleLines int64  `json:"console_lines,omitempty"` // console lines neither in memory nor in console.log
	ConsoleBytes int64  `json:"console_bytes,omitempty"` // their bytes
	ConsoleWhere string `json:"console_where,omitempty"` // which lines: "lines 2001-90000"
	LongLines    int64  `json:"long_lines,omitempty"`    // console lines cut at the line cap
	ControlLong  int64  `json:"control_long,omitempty"`  // control lines over the cap, discarded
	Garbage      int64  `json:"garbage,omitempty"`       // control lines that were not JSON, discarded
	// Samples says where the guest's samples stopped being kept (at
	// MaxSamplesFile in total, periodic samplers earlier), "" = all kept.
	Samples string `json:"samples,omitempty"`
}

// String says what was dropped in one line.
func (d Dropped) String() string {
	var parts []string
	if d.ConsoleLines > 0 {
		parts = append(parts, fmt.Sprintf("%d console lines (%d bytes, %s) not kept", d.ConsoleLines, d.ConsoleBytes, d.ConsoleWhere))
	}
	if d.LongLines > 0 {
		parts = append(parts, fmt.Sprintf("%d console lines cut", d.LongLines))
	}
	if d.ControlLong > 0 || d.Garbage > 0 {
		parts = append(parts, fmt.Sprintf("%d control lines too long, %d not JSON", d.ControlLong, d.Garbage))
	}
	if d.Samples != "" {
		parts = append(parts, d.Samples)
	}
	return "guest output over the bounds: " + strings.Join(parts, "; ")
}

// Injection is one race-widening probe of a run.
type Injection struct {
	Name        string  `json:"name"`
	At          string  `json:"at"`
	On          string  `json:"on"` // entry or return
	Delay       string  `json:"delay"`
	Probability float64 `json:"probability"`
	Line        int     `json:"line"`
	// Hits counts the probed function's runs, Fired the delays injected.
	Hits  uint64 `json:"hits"`
	Fired uint64 `json:"fired"`
	// Warning says why the probe widened nothing, if so.
	Warning string `json:"warning,omitempty"`
}

// Coverage is what a run reached of the code a kernel's series changes.
type Coverage struct {
	Funcs []FuncCalls `json:"funcs"`
	// Partial says the counts were read before the timeline ended.
	Partial bool `json:"partial,omitempty"`
}

// CoverFunc is a function a kernel's series changes and the symbols whose
// calls stand for its own.
type CoverFunc struct {
	Func string `json:"func"`
	// Probes are its own symbol, a compiler clone of it, or (inlined) the
	// functions that call it; none when nothing can count it.
	Probes []string `json:"probes,omitempty"`
	// Via is "" (its own symbol), "clone" or "callers".
	Via string `json:"via,omitempty"`
}

// FuncCalls is one changed function's calls in a run: the sum of its
// probes'. Through callers it is an upper bound, and 0 still proves the
// function did not run.
type FuncCalls struct {
	CoverFunc
	Calls uint64 `json:"calls"`
	// Why says why it was not counted, when it was not.
	Why string `json:"why,omitempty"`
}

// Counted reports whether a probe counted the function.
func (f FuncCalls) Counted() bool { return f.Why == "" && len(f.Probes) > 0 }

// NotExercised reports whether the run counted every function the series
// changes and none of them ran: the run said nothing about the change.
func (c *Coverage) NotExercised() bool {
	if c == nil || len(c.Funcs) == 0 || c.Partial {
		return false
	}
	for _, f := range c.Funcs {
		if !f.Counted() || f.Calls > 0 {
			return false
		}
	}
	return true
}

// Kernel identifies the kernel that ran.
type Kernel struct {
	Spec    string `json:"spec"`
	Flavour string `json:"flavour,omitempty"` // "debug", "kselftest-net", ... (see lab --flavour)
	Key     string `json:"key"`               // build cache key
	Release string `json:"release"`           // uname -r in the guest
	BzImage string `json:"bzimage"`
	Commit  string `json:"commit,omitempty"` // tree or git base: the commit built on
	Dirty   string `json:"dirty,omitempty"`  // tree base: git tree id of the working tree, when not the commit's
}

// Timings are wall-clock seconds.
type Timings struct {
	Boot float64 `json:"boot"` // QEMU start to agent ready
	// BootPhases split Boot where the guest's agent dated its start.
	BootPhases *BootPhases `json:"boot_phases,omitempty"`
	Timeline   float64     `json:"timeline"` // first step start to last step end
	Total      float64     `json:"total"`
	Kmemleak   float64     `json:"kmemleak,omitempty"` // the end-of-timeline kmemleak scans (debug kernels)
}

// BootPhases is where a boot went, seconds: Before the kernel's clock
// started (QEMU, firmware, loading: Boot less the guest's uptime at ready),
// the Kernel to running /init, the Agent from /init to ready (of which
// Runtime before its own code: the Go runtime's start and package inits).
type BootPhases struct {
	Before  float64 `json:"before"`
	Kernel  float64 `json:"kernel"`
	Agent   float64 `json:"agent"`
	Runtime float64 `json:"runtime"`
}

// Assert is one assertion's outcome, with what was measured.
type Assert struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Line     int    `json:"line"`
	Passed   bool   `json:"passed"`
	Measured string `json:"measured"`
	Bound    string `json:"bound"`
	Detail   string `json:"detail,omitempty"`
	// Window says which part of the timeline the assertion looked at (empty:
	// all of it); Spans are those parts, seconds since the timeline began.
	Window string       `json:"window,omitempty"`
	Spans  [][2]float64 `json:"spans,omitempty"`
	// Unmeasured marks an assertion the lab could not evaluate (no samples
	// in its window, a source that failed): its failure is the lab's, an ERROR.
	Unmeasured bool `json:"unmeasured,omitempty"`
	// TimingOnly marks an assertion a starved host can fail with a sound
	// kernel (scenarios.Assert.TimingOnly): a run failing only on such
	// assertions runs once more.
	TimingOnly bool `json:"timing_only,omitempty"`
}

// KindInvariant is the Kind of an invariant's outcome (results/model):
// a rule of the kernel every run is checked against, not one a scenario wrote.
const KindInvariant = "invariant"

// Reason is how a failed assertion reads among a result's Reasons.
func (a Assert) Reason() string {
	return fmt.Sprintf("%s: measured %s, want %s", a.Name, a.Measured, a.Bound)
}

// Knob is one repetition of a step that changed a device's NAPI state:
// threaded (sysfs or napi-set), the link (down disables its NAPIs), a
// feature that makes the driver delete and add them again (veth's GRO and
// XDP), or who polls them: a busy-polling receiver starting or stopping.
// Each starts a new settling time.
type Knob struct {
	Step  string  `json:"step"`
	Line  int     `json:"line"`
	Start float64 `json:"start"` // issued, seconds since the timeline began
	Done  float64 `json:"done"`  // returned: the kernel had applied it by then
	Netns string  `json:"netns,omitempty"`
	Dev   string  `json:"dev"`
	Queue *int    `json:"queue,omitempty"` // the NAPI of one RX queue; nil: every NAPI of Dev
	// NAPISet says the change went through napi-set, which reaches only
	// the NAPIs napi-get lists (those with an id: not virtio-net's TX
	// NAPIs); sysfs threaded reaches every NAPI of the device.
	NAPISet bool   `json:"napi_set,omitempty"`
	Kind    string `json:"kind"`  // KnobThreaded, KnobLink, KnobNAPIs, KnobChannels, KnobUnknown, KnobBusyPoller, KnobRPS, KnobRFS or KnobNetifRx
	Value   string `json:"value"` // threaded: 0, 1, disabled, enabled, busy-poll; link: up, down; GRO on, off; XDP attach, detach; busy-poller on, off; rps: a mask; rfs: a count
	// Failed says the action returned an error: what it left is unknown.
	Failed bool `json:"failed,omitempty"`
	// NIC says Dev is one of the guest's virtio-net NICs (topology nics),
	// not a veth.
	NIC bool `json:"nic,omitempty"`
}

// Knob kinds.
const (
	KnobThreaded = "threaded"
	KnobLink     = "link"
	KnobNAPIs    = "napis" // GRO or XDP: the NAPIs may be added anew
	// KnobChannels changes a NIC's channel count (Value): its NAPIs are
	// disabled and enabled, some queues stop or start receiving. Only the
	// liveness rule reads it: the mode rules' NAPIs keep their mode.
	KnobChannels = "channels"
	// KnobUnknown is an exec or kselftest step running (Dev "*", Value
	// "run"): it may bring any device down. Only the liveness rule reads
	// it, as a change on every device for as long as the step runs.
	KnobUnknown = "unknown"
	// KnobBusyPoller is a load's busy-polling receiver (SO_BUSY_POLL) on
	// Dev starting (Value BusyPollerOn) or stopping (BusyPollerOff).
	KnobBusyPoller = "busy-poller"
	BusyPollerOn   = "on"
	BusyPollerOff  = "off"
	// KnobRPS sets the rps_cpus mask (Value, hex) of Dev's RX queue Queue;
	// KnobRFS sets rps_flow_cnt of one (Dev, Queue) or, with no Dev, the
	// rps_sock_flow_entries sysctl: RFS, which steers to any CPU.
	KnobRPS = "rps"
	KnobRFS = "rfs"
	// KnobNetifRx is a device that hands what it receives to the backlog
	// of the CPU it runs on unless its RX queue has an RPS mask (netif_rx:
	// veth without NAPI, lo), recorded at 0s; Dev "*" stands for devices
	// the lab does not know (an exec or kselftest step makes its own).
	KnobNetifRx = "netif-rx"
)

// Step is one timeline step as it ran.
type Step struct {
	Name       string  `json:"name"`
	Line       int     `json:"line"`
	Start      float64 `json:"start"` // seconds since the timeline began
	Duration   float64 `json:"duration"`
	Iterations int     `json:"iterations"`
	Tolerated  int     `json:"tolerated,omitempty"` // iterations that failed with a tolerated errno
	Error      string  `json:"error,omitempty"`
	// Outputs are what an exec step's runs printed: the first few runs and
	// the last; Iterations tells how many there were.
	Outputs []ExecOutput `json:"outputs,omitempty"`
}

// ExecOutput is what one run of an exec step printed: the head of each
// stream here, the whole (bounded) output in a file of the run folder.
type ExecOutput struct {
	Run      int    `json:"run"`              // the step's run, from 1
	ExitCode int    `json:"exit_code"`        // -1 when the program was killed
	File     string `json:"file,omitempty"`   // relative to the run folder; "" when not written
	Stdout   string `json:"stdout,omitempty"` // the head of its standard output
	Stderr   string `json:"stderr,omitempty"` // the head of its standard error
}

// Unkept is how many of the step's runs left no output: an exec step
// repeated with every keeps only its first runs' and its last run's.
func (s Step) Unkept() int {
	if len(s.Outputs) == 0 {
		return 0
	}
	return max(0, s.Iterations-len(s.Outputs))
}

// Load is what a traffic load sent and its sink received.
type Load struct {
	Name       string        `json:"name"`
	Sent       uint64        `json:"sent"`
	Received   uint64        `json:"received"`
	SendErrors uint64        `json:"send_errors"`
	MaxGapMs   int           `json:"max_gap_ms"` // longest stretch without delivery while it ran
	PerSecond  []uint64      `json:"per_second"` // received packets (rr: transactions) per second
	Bytes      uint64        `json:"bytes,omitempty"`
	Latency    *wire.Latency `json:"latency,omitempty"` // rr loads
	// XSK says how an xsk load's socket bound (copy or zero-copy, XDP
	// native or generic) and its socket statistics, in one line.
	XSK string `json:"xsk,omitempty"`
	// Dev and Netns name the device the load's packets arrive on, and
	// Sending what its sender sent per 100 ms (wire.BucketWidthMs) from
	// SendingFrom (seconds since the timeline began): the evidence the
	// liveness invariant reads that packets were pending there.
	Dev         string   `json:"dev,omitempty"`
	Netns       string   `json:"netns,omitempty"`
	Sending     []uint64 `json:"sending,omitempty"`
	SendingFrom float64  `json:"sending_from,omitempty"`
	// Kind is the load's kind (udp, tcp, rr, xsk), set only when both
	// counts are known (the sink's and the sender's); FromNetns is the
	// sender's namespace, FromHost says the runner sent through a tap: the
	// conservation invariant reads where each packet may have been
	// dropped from them.
	Kind      string `json:"kind,omitempty"`
	FromNetns string `json:"from_netns,omitempty"`
	FromHost  bool   `json:"from_host,omitempty"`
	// Routed says the packets cross a namespace that forwards them to
	// the sink's: devices and counters on the way the invariants do not read.
	Routed bool `json:"routed,omitempty"`
	// Undrained says the sink closed its socket before it was empty (its
	// drain ran out of time): Received misses what it still held.
	Undrained bool `json:"undrained,omitempty"`
}

// Hang is a step that did not finish before its deadline.
type Hang struct {
	Step     string `json:"step"`
	Line     int    `json:"line"`
	Deadline string `json:"deadline"`
	Function string `json:"function,omitempty"` // where the stuck task sleeps, when known
	Evidence string `json:"evidence,omitempty"` // stacks, SysRq output
	// Host says what the host's scheduler gave QEMU over the step: a
	// starved guest's deadline miss is the host's fault (ERROR).
	Host string `json:"host,omitempty"`
}

// Title names a run's failure the same way each time it happens: the first
// kernel splat not allowed, else the hang, else the failed assertions, else
// the first reason. A hang names an ERROR by its reason (a starved host, no
// evidence), not as a hang. PASS has no title.
func (r *Result) Title() string {
	if r.Verdict == Pass {
		return ""
	}
	for _, s := range r.Splats {
		if s.Allowed == "" {
			return s.Title
		}
	}
	if r.Hang != nil && r.Verdict == Fail {
		if r.Hang.Function != "" {
			return "hang in " + r.Hang.Function
		}
		return "hang in step " + r.Hang.Step
	}
	// A measured failure names a FAIL better than one the lab could not measure.
	for _, measured := range []bool{true, false} {
		for _, a := range r.Asserts {
			if !a.Passed && (!measured || !a.Unmeasured) {
				if a.Kind == KindInvariant {
					return "invariant failed: " + a.Name
				}
				return "assertion failed: " + a.Name
			}
		}
	}
	if len(r.Reasons) > 0 {
		return r.Reasons[0]
	}
	return string(r.Verdict)
}

// Write stores result.json in dir atomically: a temporary file beside it,
// synced, renamed over it, and the folder synced. A crash leaves the old
// result.json or the new one, never a part; on error the temporary file is
// removed (after the rename, the new file stays). report.Save adds
// junit.xml and the reports, and calls it last.
func (r *Result) Write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to write result: %w", err)
	}
	if err := WriteAtomic(filepath.Join(dir, ResultFile), append(b, '\n')); err != nil {
		return fmt.Errorf("failed to write result: %w", err)
	}
	return nil
}

// WriteAtomic replaces path with data (mode 0644): a temp file beside it,
// synced, renamed over path, and the folder synced. A crash leaves the old
// file or the new one, never a part; on error the temp file is removed.
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if !renamed {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// MaxResultSize bounds the result.json Read accepts.
const MaxResultSize = 64 << 20

// Read loads a result.json, a regular file of at most MaxResultSize.
func Read(path string) (*Result, error) {
	b, err := safefs.ReadRegular(path, MaxResultSize)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Replay is what `lab repro` needs to run a run again: the same kernel (by
// spec and content key), image, resolved scenario (scenario.yaml beside it),
// parameters and seed. It is written as replay.json in every run folder.
type Replay struct {
	KernelSpec string            `json:"kernel_spec"`       // the spec file the kernel was built from
	Flavour    string            `json:"flavour,omitempty"` // the kernel's build flavour (lab --flavour)
	KernelKey  string            `json:"kernel_key"`
	ImageHash  string            `json:"image_hash"`
	Scenario   string            `json:"scenario"` // the original scenario file
	Params     map[string]string `json:"params,omitempty"`
	Seed       int64             `json:"seed"`
	Accel      string            `json:"accel"`
	QEMU       string            `json:"qemu"`
	Commit     string            `json:"commit,omitempty"` // tree or git base: the commit built on (lab repro builds it)
	Dirty      string            `json:"dirty,omitempty"`  // tree base: the working tree's git tree id, when not the commit's
}
