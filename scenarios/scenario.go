// Package scenarios is the lab's scenario language: YAML files that say what
// guest to boot, which NICs, veths and namespaces to build, what load to run,
// what to toggle on a timeline and what must hold afterwards.
//
//	s, err := scenarios.Open("scenarios/threaded-toggle-under-load.yaml", params)
//
// The package knows nothing of VMs: a step's action runs against a Lab,
// which the runner implements.
package scenarios

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Scenario is one parsed and validated scenario file.
type Scenario struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Include     []string          `yaml:"include"` // fragment files merged in (paths relative to this file)
	Params      map[string]string `yaml:"params"`  // defaults for ${name} substitution
	Presets     Presets           `yaml:"presets"` // named sets of params values (preset.go)
	Seed        int64             `yaml:"seed"`    // for jitter; 0 = pick one (recorded in the result)
	Machine     Machine           `yaml:"machine"`
	Topology    Topology          `yaml:"topology"`
	Loads       map[string]*Load  `yaml:"loads"`
	Samplers    []*Sampler        `yaml:"samplers"`
	Timeline    []*Step           `yaml:"timeline"`
	Asserts     []*Assert         `yaml:"asserts"`
	// Inject lists race-widening probes (delays at kernel functions).
	Inject   []*Inject `yaml:"inject"`
	Defaults Defaults  `yaml:"defaults"`
	// Kernel is the oldest kernel the scenario applies to.
	Kernel KernelReq `yaml:"kernel"`
	// Flavours sets parameters for runs on a kernel flavour ("debug").
	Flavours map[string]FlavourParams `yaml:"flavours"`
	// Perf compares the tested kernel with a baseline against budgets.
	Perf *Perf `yaml:"perf"`
	// Invariants turns off the model's invariants (results/model) that do
	// not hold for this scenario, each with its reason.
	Invariants Invariants `yaml:"invariants"`

	// Path is the file the scenario came from.
	Path string `yaml:"-"`
	// Source is the resolved scenario (includes merged, parameters substituted) as YAML.
	Source []byte `yaml:"-"`
	// Includes are the fragment files that were merged in.
	Includes []string `yaml:"-"`
	// MeasureHash is the hex SHA-256 of what a run's samples depend on: the
	// resolved scenario without perf, name, description and comments.
	MeasureHash string `yaml:"-"`
	// Chosen is "param=value" for each preset in force.
	Chosen []string `yaml:"-"`
	// Values are the parameters in force: the defaults under params with
	// the caller's values over them.
	Values map[string]string `yaml:"-"`
	// Warnings are problems that do not stop a run ("file:line:col: warning: ...").
	Warnings []string `yaml:"-"`

	namePos Pos // where name: is, for its error
	// written are the load and step names the file declares, whether or not
	// they decoded: a reference to one that did not is not an error twice.
	written struct{ loads, steps map[string]bool }
	root    *yaml.Node // the document, for the positions of keys (checker.keyPos)
}

// Machine is the guest's hardware and boot settings.
type Machine struct {
	CPUs     int               `yaml:"cpus"`      // vCPUs, default 2
	MemoryMB int               `yaml:"memory_mb"` // default 256
	Cmdline  []string          `yaml:"cmdline"`   // extra kernel command-line words
	Sysctls  map[string]string `yaml:"sysctls"`   // set by the agent before the topology
	// Image is the guest userspace: "agent" (default: the agent alone) or
	// "debian" (a Debian userspace for exec steps; kselftest steps imply it).
	Image string `yaml:"image"`
	// Flavour is "debug" for a scenario that only makes sense on a debug
	// kernel (sanitizers); the run builds that flavour of every kernel.
	Flavour string `yaml:"flavour"`
}

// FlavourDebug is the only flavour a scenario can ask for (kselftest steps
// ask for the kselftest flavour themselves).
const FlavourDebug = "debug"

// Guest images.
const (
	ImageAgent  = "agent"
	ImageDebian = "debian"
)

// NeedsDebian says whether the scenario boots the Debian image.
func (s *Scenario) NeedsDebian() bool {
	return s.Machine.Image == ImageDebian || len(s.Kselftests()) > 0
}

// Topology is the guest's network.
type Topology struct {
	NICs  []*NIC   `yaml:"nics"`
	Netns []string `yaml:"netns"`
	Veths []*Veth  `yaml:"veths"`
	// Routes lead traffic across the guest: from the host, or from one
	// namespace, to an address behind another (the guest forwards it when
	// machine.sysctls sets net.ipv4.ip_forward).
	Routes []*Route `yaml:"routes"`
}

// Route is a static route in a guest namespace or, with Host, in the
// host's namespace of the taps: packets for To go to the neighbour Via.
type Route struct {
	To    string `yaml:"to"`  // a network, CIDR
	Via   string `yaml:"via"` // an address on a subnet the namespace is on
	Netns string `yaml:"netns"`
	Host  bool   `yaml:"host"`
	Pos   Pos    `yaml:"-"`
}

// NIC is a virtio-net device on a multi-queue tap driven from the host.
type NIC struct {
	Name    string `yaml:"name"`    // device name in the guest
	Queues  int    `yaml:"queues"`  // virtio queue pairs, default 1
	Address string `yaml:"address"` // guest address, CIDR
	Host    string `yaml:"host"`    // host (tap) address, CIDR
	GRO     *bool  `yaml:"gro"`
	// EventIdx false turns off virtio's interrupt suppression (QEMU
	// event_idx=off): every filled buffer interrupts while callbacks are on.
	EventIdx *bool `yaml:"event_idx"`
	// Features sets ethtool features by name (ethtool -k spelling).
	Features map[string]bool `yaml:"features"`
	MAC      string          `yaml:"mac"` // default 52:54:00:12:34:<index+0x56>
	Pos      Pos             `yaml:"-"`
}

// Veth is a veth pair; the first end may sit in a namespace too.
type Veth struct {
	End    `yaml:",inline"`
	Peer   End `yaml:"peer"`
	Queues int `yaml:"queues"`
	// StaticNeigh gives each end a permanent neighbour entry for the other's
	// address, so link bounces do not leave traffic waiting for ARP.
	StaticNeigh bool `yaml:"static_neigh"`
	Pos         Pos  `yaml:"-"`
}

// End is one end of a veth pair.
type End struct {
	Name    string `yaml:"name"`
	Netns   string `yaml:"netns"`
	Address string `yaml:"address"`
	GRO     *bool  `yaml:"gro"`
	// Features sets ethtool features by name, e.g. tx-tcp-segmentation:
	// false on a veth sender so that veth's NAPI takes its datagrams.
	Features map[string]bool `yaml:"features"`
}

// Load is traffic: a sender and a sink the lab starts together.
type Load struct {
	Kind    string   `yaml:"kind"`  // udp (datagrams), tcp (a stream), rr (request/response, latency histogram), xsk (an AF_XDP receiver)
	Proto   string   `yaml:"proto"` // rr only: udp (default) or tcp
	From    Endpoint `yaml:"from"`  // "host" or {netns: x}
	To      Endpoint `yaml:"to"`    // {address: a, port: p} or {nic: eth0, port: p}
	Flows   int      `yaml:"flows"`
	Size    int      `yaml:"size"`
	Rate    int      `yaml:"rate"` // packets (tcp: writes, rr: transactions) per second, 0 = as fast as possible
	CPU     *int     `yaml:"cpu"`  // sender CPU
	SinkCPU *int     `yaml:"sink_cpu"`
	// BusyPoll sets SO_BUSY_POLL on the sink socket, in microseconds.
	BusyPoll int    `yaml:"busy_poll"`
	Pos      Pos    `yaml:"-"`
	Name     string `yaml:"-"`
	// Resolved by validation: where the sink listens.
	SinkNetns string `yaml:"-"`
	SinkAddr  string `yaml:"-"`
	SinkDev   string `yaml:"-"` // the device holding SinkAddr (the nic for to: {nic})
	// Routed says the sink is on no subnet of the sender's namespace: its
	// packets cross a namespace that forwards them (topology.routes).
	Routed bool `yaml:"-"`

	// XSK configures a kind: xsk load's AF_XDP receiver.
	XSK *XSK `yaml:"xsk"`

	// SinkPolicy, SinkPriority and SinkNice schedule the receiver's threads
	// as a sched step would (policy other, batch, idle, fifo or rr).
	SinkPolicy   string `yaml:"sink_policy" jsonschema:"enum=other,enum=batch,enum=idle,enum=fifo,enum=rr"`
	SinkPriority int    `yaml:"sink_priority" jsonschema:"minimum=0,maximum=99"`
	SinkNice     *int   `yaml:"sink_nice" jsonschema:"minimum=-20,maximum=19"`
	// RcvBuf is the udp receiver's SO_RCVBUF in bytes, set past
	// net.core.rmem_max (the kernel doubles it); 0 keeps the lab's default
	// (4 MiB asked with SO_RCVBUF, which net.core.rmem_max caps).
	RcvBuf int `yaml:"rcvbuf" jsonschema:"minimum=0"`
	// OpenLoop makes an rr client send at rate whether or not answers came
	// (xsk_rr's sender), so a slow answer does not hold back the requests
	// behind it; latencies run from each send (the client shares the guest:
	// its lateness in waking is not the answer's).
	OpenLoop bool `yaml:"open_loop"`
}

// Endpoint is where traffic comes from or goes to.
type Endpoint struct {
	Host    bool   `yaml:"-"` // the host, through a NIC's tap
	Netns   string `yaml:"netns"`
	Address string `yaml:"address"`
	NIC     string `yaml:"nic"`
	Port    int    `yaml:"port"`
}

// Sampler records kernel state every period during the timeline.
type Sampler struct {
	Source string   `yaml:"source"` // softirqs, softnet_stat, interrupts, snmp, netdev, qdisc[:<netns>], napi[:<netns>], threads:<prefix>, file:<path>
	Every  Duration `yaml:"every"`
	Pos    Pos      `yaml:"-"`
}

// Defaults apply to every step.
type Defaults struct {
	Deadline Duration `yaml:"deadline"` // per action, default 10s
}

// Step is one timeline entry: exactly one action, optionally repeated. Each
// action's type and methods are in action_<kind>.go (see action.go).
type Step struct {
	Name     string      `yaml:"name"`
	Write    *Write      `yaml:"write"`
	Link     *Link       `yaml:"link"`
	GRO      *GRO        `yaml:"gro"`
	Channels *Channels   `yaml:"channels"`
	Start    StringList  `yaml:"start"`
	Stop     StringList  `yaml:"stop"`
	Sleep    Duration    `yaml:"sleep"`
	Parallel []*Step     `yaml:"parallel"`
	Wait     *Wait       `yaml:"wait"`
	XDP      *XDP        `yaml:"xdp"`
	Qdisc    *Qdisc      `yaml:"qdisc"`
	NAPI     *NAPI       `yaml:"napi"`
	Inject   *InjectStep `yaml:"inject"`
	RPS      *RPS        `yaml:"rps"`
	XPS      *XPS        `yaml:"xps"`
	Sysctl   *Sysctl     `yaml:"sysctl"`
	IRQ      *IRQ        `yaml:"irq"`
	Sched    *Sched      `yaml:"sched"`
	Exec     *Exec       `yaml:"exec"`
	// Kselftest runs upstream selftests ("net:veth.sh") in order with the
	// kselftest runner; the scenario then boots the Debian image.
	Kselftest StringList `yaml:"kselftest"`

	Every    Duration `yaml:"every"`    // repeat period
	Jitter   Duration `yaml:"jitter"`   // add a random 0..jitter to every period (seeded)
	For      Duration `yaml:"for"`      // repeat until this much time passed
	Count    int      `yaml:"count"`    // or this many times
	Deadline Duration `yaml:"deadline"` // per action; exceeded = hang
	// Tolerate lists errno names (EOPNOTSUPP, EBUSY, ...) the action may fail
	// with without failing the run: races make some refusals legitimate.
	Tolerate []string `yaml:"tolerate"`
	Pos      Pos      `yaml:"-"`
}

// Assert is one outcome check; exactly one kind is set (assertKinds).
type Assert struct {
	Name    string   `yaml:"name"`
	NoSplat *NoSplat `yaml:"no-splat"`
	Threads *Threads `yaml:"threads-while"`
	NoStall *NoStall `yaml:"no-stall"`
	Grows   *Grows   `yaml:"grows"`
	Delta   *Delta   `yaml:"delta"`
	Latency *Latency `yaml:"latency"`
	Rate    *Rate    `yaml:"rate"`
	Ratio   *Ratio   `yaml:"ratio"`
	Polls   *Polls   `yaml:"polls"`
	// During evaluates a metric assertion (grows, delta, rate, ratio,
	// polls) over a window of the timeline instead of all of it.
	During *Window `yaml:"during"`
	// Each evaluates it after every repetition of the named step, over
	// Within from the repetition's start.
	Each   string   `yaml:"each"`
	Within Duration `yaml:"within"`
	Pos    Pos      `yaml:"-"`
}

// Kselftests lists the upstream selftests the scenario's steps run, in order.
func (s *Scenario) Kselftests() []string {
	var out []string
	eachStep(s.Timeline, func(st *Step) { out = append(out, st.Kselftest...) })
	return out
}

// eachStep calls f on every step, parallel ones after the step holding them.
func eachStep(steps []*Step, f func(*Step)) {
	for _, st := range steps {
		if st != nil {
			f(st)
			eachStep(st.Parallel, f)
		}
	}
}

// KselftestCollections lists the collections of Kselftests, sorted, once each.
func (s *Scenario) KselftestCollections() []string {
	var out []string
	for _, t := range s.Kselftests() {
		if c, _, ok := strings.Cut(t, ":"); ok && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}
