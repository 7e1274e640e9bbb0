package wire

import (
	"fmt"
	"net"
	"time"
)

// Hello describes the guest once the agent is up.
type Hello struct {
	Kernel  string  `json:"kernel"`  // uname -r
	Version string  `json:"version"` // /proc/version
	CPUs    int     `json:"cpus"`    // online CPUs
	Uptime  float64 `json:"uptime"`  // seconds since boot when the agent became ready
	// Exec and Main date the agent's start in seconds since boot: the
	// kernel ran it as /init at Exec (the printk clock: its record in the
	// log), its own code began at Main (Uptime's clock, after the Go
	// runtime's start and package inits). 0 when not the guest's /init.
	Exec float64 `json:"exec,omitempty"`
	Main float64 `json:"main,omitempty"`
	// Kmemleak says the kernel has kmemleak (the debug flavour).
	Kmemleak bool `json:"kmemleak,omitempty"`
}

// KmemleakReport is /sys/kernel/debug/kmemleak after two scans (bounded like
// exec output, see OutputMax), how long the scans took, and two readings of
// the guest's jiffies with its uptime, which date each object's allocation
// (its "jiffies N") on the guest's clock.
type KmemleakReport struct {
	Report  string       `json:"report"`
	Seconds float64      `json:"seconds"`
	Clock   [2]TickPoint `json:"clock"`
}

// TickPoint is the guest's jiffies at an uptime (CLOCK_BOOTTIME seconds).
type TickPoint struct {
	Jiffies uint64  `json:"jiffies"`
	Uptime  float64 `json:"uptime"`
}

// Uptime dates a jiffies value on the guest's uptime clock, from the two
// readings; ok is false when they cannot give a tick rate.
func (r *KmemleakReport) Uptime(jiffies uint64) (float64, bool) {
	a, b := r.Clock[0], r.Clock[1]
	if b.Jiffies <= a.Jiffies || b.Uptime <= a.Uptime {
		return 0, false
	}
	hz := float64(b.Jiffies-a.Jiffies) / (b.Uptime - a.Uptime)
	return b.Uptime - (float64(b.Jiffies)-float64(jiffies))/hz, true
}

// Topology is what the agent builds inside the guest before the timeline.
type Topology struct {
	Netns   []string          `json:"netns,omitempty"`
	NICs    []NIC             `json:"nics,omitempty"`
	Veths   []Veth            `json:"veths,omitempty"`
	Routes  []Route           `json:"routes,omitempty"`  // added after the devices
	Sysctls map[string]string `json:"sysctls,omitempty"` // path under /proc/sys (dots or slashes) -> value
}

// Route is a static route in a namespace: packets for To (CIDR) go to the
// neighbour Via.
type Route struct {
	Netns string `json:"netns,omitempty"`
	To    string `json:"to"`
	Via   string `json:"via"`
}

// Parse returns the route's destination and gateway.
func (r Route) Parse() (*net.IPNet, net.IP, error) {
	_, dst, err := net.ParseCIDR(r.To)
	if err != nil {
		return nil, nil, err
	}
	via := net.ParseIP(r.Via)
	if via == nil {
		return nil, nil, fmt.Errorf("bad address %q", r.Via)
	}
	return dst, via, nil
}

// NIC is a virtio-net device, found by MAC and renamed to Name.
type NIC struct {
	Name    string `json:"name"`
	MAC     string `json:"mac"`
	Address string `json:"address,omitempty"` // CIDR
	Queues  int    `json:"queues,omitempty"`  // combined channels to set, 0 = leave
	GRO     *bool  `json:"gro,omitempty"`
	// Features are ethtool features to set, by name.
	Features map[string]bool `json:"features,omitempty"`
}

// End is one side of a veth pair.
type End struct {
	Name    string `json:"name"`
	Netns   string `json:"netns,omitempty"` // "" = the root namespace
	Address string `json:"address,omitempty"`
	GRO     *bool  `json:"gro,omitempty"`
	// Features are ethtool features to set, by name.
	Features map[string]bool `json:"features,omitempty"`
}

// Veth is a veth pair.
type Veth struct {
	A      End `json:"a"`
	B      End `json:"b"`
	Queues int `json:"queues,omitempty"`
	// StaticNeigh adds permanent neighbour entries for each end's peer.
	StaticNeigh bool `json:"static_neigh,omitempty"`
}

// FaultPath is not a file: writing a probability p to it fails the write
// with probability p. The lab's tests use it to make flaky runs on purpose.
const FaultPath = "/napilab/fault"

// File names a file in a namespace's view; /sys paths resolve to that
// namespace's sysfs.
type File struct {
	Path  string `json:"path"`
	Netns string `json:"netns,omitempty"`
	Value string `json:"value,omitempty"`
}

// Link sets a device up or down.
type Link struct {
	Dev   string `json:"dev"`
	Netns string `json:"netns,omitempty"`
	Up    bool   `json:"up"`
}

// Feature switches an ethtool feature (rx-gro, ...).
type Feature struct {
	Dev     string `json:"dev"`
	Netns   string `json:"netns,omitempty"`
	Feature string `json:"feature"`
	On      bool   `json:"on"`
}

// Channels sets the combined channel count (ethtool -L combined N).
type Channels struct {
	Dev      string `json:"dev"`
	Netns    string `json:"netns,omitempty"`
	Combined int    `json:"combined"`
}

// Load kinds.
const (
	LoadUDPSend  = "udp-send"  // UDP datagrams (sendmmsg) from Flows sockets
	LoadUDPSink  = "udp-sink"  // counts datagrams (recvmmsg)
	LoadTCPSend  = "tcp-send"  // TCP stream: Flows connections writing Size-byte chunks
	LoadTCPSink  = "tcp-sink"  // accepts and counts bytes (Packets counts reads)
	LoadRRServer = "rr-server" // request/response echo server (Proto udp or tcp)
	LoadRRClient = "rr-client" // Flows concurrent clients, Size-byte requests, latency histogram
	LoadXSK      = "xsk"       // AF_XDP socket on one RX queue: a sink or an rr responder (Load.XSK)
)

// Load starts a traffic generator or sink in the guest.
type Load struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Netns string `json:"netns,omitempty"`
	Addr  string `json:"addr"` // destination (send) or bind address (sink)
	Port  int    `json:"port"`
	Flows int    `json:"flows,omitempty"` // send: number of source sockets
	Size  int    `json:"size,omitempty"`  // send: payload bytes
	Rate  int    `json:"rate,omitempty"`  // send: packets per second, 0 = as fast as possible
	CPU   int    `json:"cpu"`             // pin to this CPU, -1 = not pinned
	// BusyPoll sets SO_BUSY_POLL (microseconds) on a sink's socket, 0 = off.
	BusyPoll int `json:"busy_poll,omitempty"`
	// Proto is udp or tcp for rr-server and rr-client.
	Proto string `json:"proto,omitempty"`
	// XSK configures an xsk load; Addr and Port pick the UDP datagrams its
	// XDP program redirects (Addr is not checked, Port is).
	XSK *XSK `json:"xsk,omitempty"`
	// Policy, Priority and Nice set the scheduling of the load's threads
	// as Sched does; empty leaves the agent's (SCHED_OTHER, nice 0).
	Policy   string `json:"policy,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Nice     *int   `json:"nice,omitempty"`
	// RcvBuf sets a udp-sink's SO_RCVBUF with SO_RCVBUFFORCE, past
	// net.core.rmem_max (the kernel doubles it); 0 asks for 4 MiB with
	// SO_RCVBUF, which rmem_max caps.
	RcvBuf int `json:"rcvbuf,omitempty"`
	// OpenLoop makes a udp rr client send at Rate whether or not answers
	// came; latencies run from each send.
	OpenLoop bool `json:"open_loop,omitempty"`
}

// XSK modes and receive styles.
const (
	XSKSink     = "sink"     // count frames and bytes
	XSKRR       = "rr"       // answer each UDP request on the tx ring
	XSKBlocking = "blocking" // poll() that sleeps until a frame arrives
	XSKPoll     = "poll"     // poll() with a zero timeout, in a loop
	XSKBusy     = "busy"     // spin on the rx ring, recvfrom kicks when it is empty
)

// XSK is an AF_XDP socket bound to Dev's RX queue Queue, fed by an XDP
// program that redirects the queue's UDP datagrams to Load.Port into it.
// Load.BusyPoll sets SO_BUSY_POLL on it.
type XSK struct {
	Dev   string `json:"dev"`
	Queue int    `json:"queue"`
	// Mode is XSKSink or XSKRR.
	Mode string `json:"mode"`
	// AppDelayNs is busy-waited for each request before its answer (rr).
	AppDelayNs int64 `json:"app_delay_ns,omitempty"`
	// Receive is XSKBlocking (default), XSKPoll or XSKBusy.
	Receive string `json:"receive,omitempty"`
	// PreferBusyPoll sets SO_PREFER_BUSY_POLL.
	PreferBusyPoll bool `json:"prefer_busy_poll,omitempty"`
	// BusyPollBudget sets SO_BUSY_POLL_BUDGET, 0 = the kernel's (8).
	BusyPollBudget int `json:"busy_poll_budget,omitempty"`
	// Batch is the most frames one pass takes off the rx ring, 0 = 64.
	Batch int `json:"batch,omitempty"`
	// ZeroCopy asks for XDP_ZEROCOPY; a driver that refuses it gets copy mode.
	ZeroCopy bool `json:"zero_copy,omitempty"`
	// XDPMode is native, generic or empty (native where the driver has it).
	XDPMode string `json:"xdp_mode,omitempty"`
	// PollCPU, when set, runs a second thread on that CPU that only kicks
	// rx (recvfrom), so SO_BUSY_POLL polls the NAPI from a separate core.
	PollCPU *int `json:"poll_cpu,omitempty"`
}

// XSKStats is what an xsk load says besides its counts: how it bound and
// the socket's XDP_STATISTICS at the stop.
type XSKStats struct {
	// Bound is "copy" or "zero-copy".
	Bound string `json:"bound"`
	// ZeroCopyRefused is the bind error when zero-copy was asked and refused.
	ZeroCopyRefused string `json:"zero_copy_refused,omitempty"`
	// XDPMode is how the kernel attached the program: native or generic.
	XDPMode       string `json:"xdp_mode"`
	RxDropped     uint64 `json:"rx_dropped"`
	RxInvalid     uint64 `json:"rx_invalid_descs"`
	TxInvalid     uint64 `json:"tx_invalid_descs"`
	RxRingFull    uint64 `json:"rx_ring_full"`
	FillRingEmpty uint64 `json:"fill_ring_empty_descs"`
	TxRingEmpty   uint64 `json:"tx_ring_empty_descs"`
}

// LoadName names a running load.
type LoadName struct {
	Name string `json:"name"`
}

// BucketWidthMs is the width of a LoadStats bucket.
const BucketWidthMs = 100

// LoadStats is what a load counted.
type LoadStats struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Packets uint64   `json:"packets"`
	Errors  uint64   `json:"errors"`
	Start   float64  `json:"start"`   // guest uptime when it started
	Buckets []uint64 `json:"buckets"` // packets (transactions for rr-client) per BucketWidthMs since Start
	Bytes   uint64   `json:"bytes,omitempty"`
	// Latency is the rr-client's request/response latency, when it ran.
	Latency *Latency `json:"latency,omitempty"`
	// XSK is an xsk load's binding and socket statistics.
	XSK *XSKStats `json:"xsk,omitempty"`
	// Undrained says a udp sink closed its socket when its drain ran out
	// of time, not once it was empty: what it still held was not counted.
	Undrained bool `json:"undrained,omitempty"`
}

// Latency summarises request/response times in microseconds.
type Latency struct {
	Count uint64  `json:"count"`
	P5    float64 `json:"p5_us"`
	P50   float64 `json:"p50_us"`
	P90   float64 `json:"p90_us"`
	P95   float64 `json:"p95_us"`
	P99   float64 `json:"p99_us"`
	P999  float64 `json:"p999_us"`
	Max   float64 `json:"max_us"`
}

// Sample sources.
const (
	SourceSoftirqs   = "softirqs"     // /proc/softirqs
	SourceSoftnet    = "softnet_stat" // /proc/net/softnet_stat
	SourceInterrupts = "interrupts"   // /proc/interrupts
	SourceSNMP       = "snmp"         // /proc/net/snmp
	SourceNetdev     = "netdev"       // /proc/net/dev
	// SourceNAPIPolls counts NAPI polls by context (BPF on napi:napi_poll):
	// lines "dev napi context cpu pid polls packets", cumulative since the
	// first read; context is softirq, ksoftirqd, kthread or busypoll.
	SourceNAPIPolls = "napi_polls"
	PrefixThreads   = "threads:" // threads:<comm prefix> -> "pid comm" lines
	PrefixTasks     = "tasks:"   // tasks:<comm prefix> -> "pid comm utime stime processor" lines (clock ticks)
	PrefixSched     = "sched:"   // sched:<comm prefix> -> "pid run_ns voluntary involuntary comm" lines (schedstat, status)
	PrefixFile      = "file:"    // file:<path> -> contents
	PrefixNsFile    = "nsfile:"  // nsfile:<netns>:<path> -> contents
	SourceQdisc     = "qdisc"    // the root namespace's qdiscs -> one line each (below)
	PrefixQdisc     = "qdisc:"   // qdisc:<netns> -> the qdiscs of that namespace
	SourceNAPI      = "napi"     // the root namespace's NAPIs (netdev napi-get) -> one line each (below)
	PrefixNAPI      = "napi:"    // napi:<netns> -> the NAPIs of that namespace
	PrefixEthtool   = "ethtool:" // ethtool:<netns>:<dev> -> "name value" lines of ethtool -S ("" netns: the root)
)

// A napi source has one line per NAPI: the device, the NAPI's name (rx-<queue>
// of the lowest RX queue it serves, else its id), then name/value pairs of
// what napi-get reported; attributes the kernel did not send are left out
// (irq without an IRQ, pid without a kthread, the settings on old kernels):
//
//	eth0 rx-0 id 8193 irq 27 pid 311 threaded 2 defer_hard_irqs 0 gro_flush_timeout 0 irq_suspend_timeout 0

// A qdisc source has one line per qdisc: the device, the parent ("root" for
// the device's root qdisc), the handle, the kind, then name/value pairs of
// its statistics (backlog in bytes, qlen in packets):
//
//	eth0 root 8001: mq packets 120 bytes 9000 drops 0 overlimits 0 requeues 3 backlog 0 qlen 0

// A source name may end in "#N" to read the same source again in one
// snapshot under another key (file:/x and file:/x#2).

// SampleArgs lists the sources to read in one snapshot.
type SampleArgs struct {
	Sources []string `json:"sources"`
}

// Sample is one snapshot: every source read at (nearly) the same instant.
type Sample struct {
	T      float64           `json:"t"`              // guest uptime, seconds
	Took   float64           `json:"took,omitempty"` // seconds from the first read to the last
	Values map[string]string `json:"values"`
	Errors map[string]string `json:"errors,omitempty"`
}

// Sysrq triggers a SysRq key.
type Sysrq struct {
	Key string `json:"key"`
}

// TaskStack is a task in uninterruptible sleep (or named) with its stack.
type TaskStack struct {
	PID   int    `json:"pid"`
	Comm  string `json:"comm"`
	State string `json:"state"`
	Wchan string `json:"wchan"`
	Stack string `json:"stack"`
}

// XDP attaches (or detaches) a trivial XDP_PASS program.
type XDP struct {
	Dev    string `json:"dev"`
	Netns  string `json:"netns,omitempty"`
	Attach bool   `json:"attach"`
	Mode   string `json:"mode,omitempty"` // "" (kernel's choice), native, generic
}

// Qdisc ops.
const (
	QdiscAdd     = "add"     // tc qdisc add: fails if a root qdisc of that kind is there
	QdiscReplace = "replace" // tc qdisc replace: changes a root qdisc of that kind, else swaps it
	QdiscDelete  = "delete"  // tc qdisc del: back to the device's default root qdisc
)

// Qdisc adds, replaces or deletes the root qdisc of a device; the kernel
// picks the handle.
type Qdisc struct {
	Dev   string `json:"dev"`
	Netns string `json:"netns,omitempty"`
	Op    string `json:"op"`              // QdiscAdd, QdiscReplace or QdiscDelete
	Kind  string `json:"kind,omitempty"`  // pfifo, pfifo_fast, fq_codel, mq or noqueue; none for delete
	Limit uint32 `json:"limit,omitempty"` // packets, for pfifo and fq_codel; 0 = the kernel's default
}

// Exec runs a program in a namespace and waits for it.
type Exec struct {
	Netns string   `json:"netns,omitempty"`
	Argv  []string `json:"argv"`
	// Dir is the working directory ("/" when empty).
	Dir string `json:"dir,omitempty"`
	// Env adds NAME=value entries to the agent's environment.
	Env []string `json:"env,omitempty"`
	// Timeout kills the program's process group after this long (the
	// agent's 10 min default when zero).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// ExecResult is what a program did.
type ExecResult struct {
	ExitCode int `json:"exit_code"`
	// Stdout is the program's standard output, bounded as Clip bounds it.
	Stdout string `json:"stdout,omitempty"`
	// Stderr is the program's standard error, bounded the same way.
	Stderr string `json:"stderr,omitempty"`
}

// IRQAffinity pins every IRQ whose /proc/interrupts name matches the regexp Match.
type IRQAffinity struct {
	Match string `json:"match"`
	CPUs  string `json:"cpus"` // smp_affinity_list syntax: "0", "1-3", "0,2"
}

// Device is what a scenario can see of a network device.
type Device struct {
	Name      string   `json:"name"`
	Netns     string   `json:"netns,omitempty"`
	OperState string   `json:"operstate"`
	Threaded  string   `json:"threaded,omitempty"` // /sys/class/net/DEV/threaded, "" if unreadable
	RxQueues  int      `json:"rx_queues"`
	TxQueues  int      `json:"tx_queues"`
	NAPI      []string `json:"napi_threads,omitempty"` // napi/DEV-* kthreads (names truncated to 15 chars)
}

// SourceInject is the inject probes' counters: lines "name hits fired".
const SourceInject = "inject"

// SourceCover is the cover probes' counters: lines "function hits 0".
const SourceCover = "cover"

// Cover names the functions whose calls a run counts: those the kernel's
// series changes.
type Cover struct {
	Funcs []string `json:"funcs"`
}

// Inject sets up race-widening probes: a busy-wait at a kernel function's
// entry (or return) with a probability, up to a count, while armed.
type Inject struct {
	// Seed seeds the per-CPU draws (the run's seed).
	Seed   int64   `json:"seed"`
	Probes []Probe `json:"probes"`
}

// Probe is one injection point.
type Probe struct {
	Name string `json:"name"`
	// At is a kallsyms symbol, optionally +offset (napi_enable, napi_enable+0x1c).
	At string `json:"at"`
	// Return probes the function's return instead of its entry.
	Return      bool          `json:"return,omitempty"`
	Delay       time.Duration `json:"delay"`
	Probability float64       `json:"probability"`
	// Count caps the firings, 0 = no cap.
	Count int  `json:"count,omitempty"`
	Armed bool `json:"armed"`
}

// InjectArm switches a probe on or off.
type InjectArm struct {
	Name string `json:"name"`
	On   bool   `json:"on"`
}

// Threaded modes of a NAPI (enum netdev_napi_threaded).
const (
	NAPIThreadedDisabled = "disabled"
	NAPIThreadedEnabled  = "enabled"
	NAPIThreadedBusyPoll = "busy-poll" // the kthread busy polls (6.19)
)

// NAPIThreadedModes are the threaded modes by their enum value.
var NAPIThreadedModes = []string{NAPIThreadedDisabled, NAPIThreadedEnabled, NAPIThreadedBusyPoll}

// NAPI changes the settings of a device's NAPIs through the netdev generic
// netlink family (napi-set); a nil field is left as it is.
type NAPI struct {
	Dev   string `json:"dev"`
	Netns string `json:"netns,omitempty"`
	// Queue selects the NAPI serving this RX queue; nil = every NAPI of Dev.
	Queue *int `json:"queue,omitempty"`
	// Threaded is NAPIThreadedDisabled, Enabled or BusyPoll; "" = leave.
	Threaded          string  `json:"threaded,omitempty"`
	DeferHardIRQs     *uint32 `json:"defer_hard_irqs,omitempty"`
	GROFlushTimeout   *uint64 `json:"gro_flush_timeout,omitempty"`   // nanoseconds
	IRQSuspendTimeout *uint64 `json:"irq_suspend_timeout,omitempty"` // nanoseconds
}
