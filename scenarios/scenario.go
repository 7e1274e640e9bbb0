// Package scenarios is the lab's scenario language: YAML files that say what
// guest to boot, which NICs, veths and namespaces to build, what load to run,
// what to toggle on a timeline and what must hold afterwards.
//
//	s, err := scenarios.Open("scenarios/threaded-toggle-under-load.yaml", params)
//
// The package knows nothing of VMs; the runner executes what it describes.
package scenarios

// Scenario is one parsed and validated scenario file.
type Scenario struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Params      map[string]string `yaml:"params"` // defaults for ${name} substitution
	Machine     Machine           `yaml:"machine"`
	Topology    Topology          `yaml:"topology"`
	Loads       map[string]*Load  `yaml:"loads"`
	Samplers    []*Sampler        `yaml:"samplers"`
	Timeline    []*Step           `yaml:"timeline"`
	Asserts     []*Assert         `yaml:"asserts"`
	Defaults    Defaults          `yaml:"defaults"`

	// Path is the file the scenario came from.
	Path string `yaml:"-"`
	// Source is the file's text after parameter substitution.
	Source []byte `yaml:"-"`
}

// Machine is the guest's hardware and boot settings.
type Machine struct {
	CPUs     int               `yaml:"cpus"`      // vCPUs, default 2
	MemoryMB int               `yaml:"memory_mb"` // default 256
	Cmdline  []string          `yaml:"cmdline"`   // extra kernel command-line words
	Sysctls  map[string]string `yaml:"sysctls"`   // set by the agent before the topology
}

// Topology is the guest's network.
type Topology struct {
	NICs  []*NIC   `yaml:"nics"`
	Netns []string `yaml:"netns"`
	Veths []*Veth  `yaml:"veths"`
}

// NIC is a virtio-net device on a multi-queue tap driven from the host.
type NIC struct {
	Name    string `yaml:"name"`    // device name in the guest
	Queues  int    `yaml:"queues"`  // virtio queue pairs, default 1
	Address string `yaml:"address"` // guest address, CIDR
	Host    string `yaml:"host"`    // host (tap) address, CIDR
	GRO     *bool  `yaml:"gro"`
	MAC     string `yaml:"mac"` // default 52:54:00:12:34:<index+0x56>
	Line    int    `yaml:"-"`
}

// Veth is a veth pair; the first end may sit in a namespace too.
type Veth struct {
	End    `yaml:",inline"`
	Peer   End `yaml:"peer"`
	Queues int `yaml:"queues"`
	Line   int `yaml:"-"`
}

// End is one end of a veth pair.
type End struct {
	Name    string `yaml:"name"`
	Netns   string `yaml:"netns"`
	Address string `yaml:"address"`
	GRO     *bool  `yaml:"gro"`
}

// Load is traffic: a sender and a sink the lab starts together.
type Load struct {
	Kind    string   `yaml:"kind"` // udp
	From    Endpoint `yaml:"from"` // "host" or {netns: x}
	To      Endpoint `yaml:"to"`   // {address: a, port: p} or {nic: eth0, port: p}
	Flows   int      `yaml:"flows"`
	Size    int      `yaml:"size"`
	Rate    int      `yaml:"rate"` // packets/s, 0 = flood
	CPU     *int     `yaml:"cpu"`  // sender CPU
	SinkCPU *int     `yaml:"sink_cpu"`
	Line    int      `yaml:"-"`
	Name    string   `yaml:"-"`
	// Resolved by validation: where the sink listens.
	SinkNetns string `yaml:"-"`
	SinkAddr  string `yaml:"-"`
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
	Source string   `yaml:"source"` // softirqs, softnet_stat, interrupts, snmp, threads:<prefix>, file:<path>
	Every  Duration `yaml:"every"`
	Line   int      `yaml:"-"`
}

// Defaults apply to every step.
type Defaults struct {
	Deadline Duration `yaml:"deadline"` // per action, default 10s
}

// Step is one timeline entry: exactly one action, optionally repeated.
type Step struct {
	Name     string     `yaml:"name"`
	Write    *Write     `yaml:"write"`
	Link     *Link      `yaml:"link"`
	GRO      *GRO       `yaml:"gro"`
	Channels *Channels  `yaml:"channels"`
	Start    StringList `yaml:"start"`
	Stop     StringList `yaml:"stop"`
	Sleep    Duration   `yaml:"sleep"`
	Parallel []*Step    `yaml:"parallel"`

	Every    Duration `yaml:"every"`    // repeat period
	For      Duration `yaml:"for"`      // repeat until this much time passed
	Count    int      `yaml:"count"`    // or this many times
	Deadline Duration `yaml:"deadline"` // per action; exceeded = hang
	Line     int      `yaml:"-"`
}

// Write writes a value (or cycles through values) to a sysfs/procfs file.
type Write struct {
	Path   string   `yaml:"path"`
	Netns  string   `yaml:"netns"`
	Value  string   `yaml:"value"`
	Values []string `yaml:"values"`
}

// Link sets a device up or down.
type Link struct {
	Dev   string `yaml:"dev"`
	Netns string `yaml:"netns"`
	State string `yaml:"state"` // up, down, toggle
}

// GRO switches rx-gro on a device.
type GRO struct {
	Dev   string `yaml:"dev"`
	Netns string `yaml:"netns"`
	On    *bool  `yaml:"on"` // unset = toggle each repetition
}

// Channels sets the combined channel count, cycling through Values.
type Channels struct {
	Dev    string `yaml:"dev"`
	Netns  string `yaml:"netns"`
	Values []int  `yaml:"values"`
}

// Assert is one outcome check; exactly one kind is set.
type Assert struct {
	Name    string   `yaml:"name"`
	NoSplat *NoSplat `yaml:"no-splat"`
	Threads *Threads `yaml:"threads-while"`
	NoStall *NoStall `yaml:"no-stall"`
	Grows   *Grows   `yaml:"grows"`
	Line    int      `yaml:"-"`
}

// NoSplat fails on any kernel splat not in Allow.
type NoSplat struct {
	Allow []Allow `yaml:"allow"`
}

// Allow lets splats whose title matches a regexp pass, with a reason.
type Allow struct {
	Title  string `yaml:"title"`
	Reason string `yaml:"reason"`
}

// Threads checks that tasks with Prefix exist (at least Min) in every
// snapshot where the file Path holds Equals.
type Threads struct {
	Prefix string   `yaml:"prefix"`
	Path   string   `yaml:"path"`
	Netns  string   `yaml:"netns"`
	Equals string   `yaml:"equals"`
	Min    int      `yaml:"min"`   // default 1
	Every  Duration `yaml:"every"` // snapshot period, default 50ms
}

// NoStall checks that a load's sink got packets in every window.
type NoStall struct {
	Load   string   `yaml:"load"`
	Window Duration `yaml:"window"` // default 1s
	Min    uint64   `yaml:"min"`    // packets per window, default 1
}

// Grows checks that a metric grew by at least Min over the timeline.
type Grows struct {
	Metric string  `yaml:"metric"` // e.g. softirqs.NET_RX, softirqs.NET_RX.cpu1
	Min    float64 `yaml:"min"`
}
