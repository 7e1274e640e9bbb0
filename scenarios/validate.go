package scenarios

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"
)

// Limits of the lab guest (NR_CPUS in kernels/configs/base.config).
const (
	MaxCPUs   = 8
	MaxQueues = 8
)

// SoftirqNames are the rows of /proc/softirqs.
var SoftirqNames = []string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}

// Sources a sampler may name; threads:<prefix> and file:<path> also work.
var Sources = []string{"softirqs", "softnet_stat", "interrupts", "snmp"}

func (s *Scenario) setDefaults() {
	if s.Machine.CPUs == 0 {
		s.Machine.CPUs = 2
	}
	if s.Machine.MemoryMB == 0 {
		s.Machine.MemoryMB = 256
	}
	if s.Defaults.Deadline == 0 {
		s.Defaults.Deadline = Duration(10 * time.Second)
	}
	for i, n := range s.Topology.NICs {
		if n.Queues == 0 {
			n.Queues = 1
		}
		if n.MAC == "" {
			n.MAC = fmt.Sprintf("52:54:00:12:34:%02x", 0x56+i)
		}
	}
	for name, l := range s.Loads {
		l.Name = name
		if l.Flows == 0 {
			l.Flows = 1
		}
		if l.Size == 0 {
			l.Size = 64
		}
	}
	for _, a := range s.Asserts {
		if a.Threads != nil && a.Threads.Min == 0 {
			a.Threads.Min = 1
		}
		if a.Threads != nil && a.Threads.Every == 0 {
			a.Threads.Every = Duration(50 * time.Millisecond)
		}
		if a.NoStall != nil && a.NoStall.Window == 0 {
			a.NoStall.Window = Duration(time.Second)
		}
		if a.NoStall != nil && a.NoStall.Min == 0 {
			a.NoStall.Min = 1
		}
	}
}

var devName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

func (s *Scenario) validate(add func(int, string, ...any)) {
	if s.Name == "" {
		add(1, "missing name")
	}
	if c := s.Machine.CPUs; c < 1 || c > MaxCPUs {
		add(1, "machine.cpus %d: want 1-%d", c, MaxCPUs)
	}
	if m := s.Machine.MemoryMB; m < 64 || m > 16384 {
		add(1, "machine.memory_mb %d: want 64-16384", m)
	}
	netns := map[string]bool{"": true}
	for _, n := range s.Topology.Netns {
		if netns[n] {
			add(1, "netns %q declared twice", n)
		}
		netns[n] = true
	}
	checkNetns := func(line int, ns string) {
		if !netns[ns] {
			add(line, "netns %q is not declared under topology.netns", ns)
		}
	}
	// addrs maps a guest address to the netns holding it.
	addrs := map[string]string{}
	devs := map[string]bool{}
	checkDev := func(line int, ns, name, cidr string) {
		if !devName.MatchString(name) {
			add(line, "device name %q: want 1-15 letters, digits, . _ -", name)
		}
		if devs[ns+"/"+name] {
			add(line, "device %q declared twice", name)
		}
		devs[ns+"/"+name] = true
		if cidr != "" {
			ip, _, err := net.ParseCIDR(cidr)
			if err != nil {
				add(line, "address %q: want CIDR like 10.0.0.1/24", cidr)
				return
			}
			addrs[ip.String()] = ns
		}
	}
	nics := map[string]*NIC{}
	for _, n := range s.Topology.NICs {
		checkDev(n.Line, "", n.Name, n.Address)
		nics[n.Name] = n
		if n.Queues < 1 || n.Queues > MaxQueues {
			add(n.Line, "nic %s: queues %d: want 1-%d", n.Name, n.Queues, MaxQueues)
		}
		if _, err := net.ParseMAC(n.MAC); err != nil {
			add(n.Line, "nic %s: bad mac %q", n.Name, n.MAC)
		}
		if n.Host != "" {
			if _, _, err := net.ParseCIDR(n.Host); err != nil {
				add(n.Line, "nic %s: host address %q: want CIDR", n.Name, n.Host)
			}
		}
	}
	for _, v := range s.Topology.Veths {
		checkNetns(v.Line, v.Netns)
		checkNetns(v.Line, v.Peer.Netns)
		checkDev(v.Line, v.Netns, v.Name, v.Address)
		checkDev(v.Line, v.Peer.Netns, v.Peer.Name, v.Peer.Address)
		if v.Netns != v.Peer.Netns && v.Netns != "" && v.Peer.Netns == "" {
			add(v.Line, "veth %s: put the root-namespace end first", v.Name)
		}
	}
	for _, name := range sortedKeys(s.Loads) {
		s.validateLoad(s.Loads[name], nics, addrs, checkNetns, add)
	}
	for _, sm := range s.Samplers {
		if !knownSource(sm.Source) {
			add(sm.Line, "unknown sampler source %q (known: %s, threads:<prefix>, file:<path>)", sm.Source, strings.Join(Sources, ", "))
		}
		if sm.Every.D() < 10*time.Millisecond {
			add(sm.Line, "sampler %s: every %v: want at least 10ms", sm.Source, sm.Every.D())
		}
	}
	if len(s.Timeline) == 0 {
		add(1, "empty timeline")
	}
	for _, st := range s.Timeline {
		s.validateStep(st, checkNetns, add)
	}
	for _, a := range s.Asserts {
		s.validateAssert(a, checkNetns, add)
	}
}

func knownSource(src string) bool {
	for _, k := range Sources {
		if src == k {
			return true
		}
	}
	return (strings.HasPrefix(src, "threads:") || strings.HasPrefix(src, "file:")) && !strings.HasSuffix(src, ":")
}

func (s *Scenario) validateLoad(l *Load, nics map[string]*NIC, addrs map[string]string, checkNetns func(int, string), add func(int, string, ...any)) {
	if l.Kind != "udp" {
		add(l.Line, "load %s: kind %q: want udp", l.Name, l.Kind)
	}
	if l.To.Port < 1 || l.To.Port > 65535 {
		add(l.Line, "load %s: to.port %d: want 1-65535", l.Name, l.To.Port)
	}
	if l.Flows < 1 || l.Flows > 1024 {
		add(l.Line, "load %s: flows %d: want 1-1024", l.Name, l.Flows)
	}
	for _, cpu := range []*int{l.CPU, l.SinkCPU} {
		if cpu != nil && (*cpu < 0 || *cpu >= s.Machine.CPUs) {
			add(l.Line, "load %s: cpu %d: the machine has %d cpus", l.Name, *cpu, s.Machine.CPUs)
		}
	}
	switch {
	case l.To.NIC != "":
		n, ok := nics[l.To.NIC]
		if !ok {
			add(l.Line, "load %s: no nic %q under topology.nics", l.Name, l.To.NIC)
			return
		}
		ip, _, err := net.ParseCIDR(n.Address)
		if err != nil {
			add(l.Line, "load %s: nic %s has no address", l.Name, n.Name)
			return
		}
		l.SinkAddr = ip.String()
		if l.From.Host && n.Host == "" {
			add(l.Line, "load %s: traffic from the host needs nic %s to have a host: address", l.Name, n.Name)
		}
	case l.To.Address != "":
		ns, ok := addrs[l.To.Address]
		if !ok {
			add(l.Line, "load %s: no device in the topology has address %s", l.Name, l.To.Address)
			return
		}
		if l.From.Host {
			add(l.Line, "load %s: traffic from the host must go to a nic (to: {nic: NAME})", l.Name)
		}
		l.SinkAddr, l.SinkNetns = l.To.Address, ns
	default:
		add(l.Line, "load %s: to needs an address or a nic", l.Name)
	}
	if !l.From.Host {
		checkNetns(l.Line, l.From.Netns)
	}
}

func (s *Scenario) validateStep(st *Step, checkNetns func(int, string), add func(int, string, ...any)) {
	var actions []string
	set := func(ok bool, name string) {
		if ok {
			actions = append(actions, name)
		}
	}
	set(st.Write != nil, "write")
	set(st.Link != nil, "link")
	set(st.GRO != nil, "gro")
	set(st.Channels != nil, "channels")
	set(len(st.Start) > 0, "start")
	set(len(st.Stop) > 0, "stop")
	set(st.Sleep > 0, "sleep")
	set(len(st.Parallel) > 0, "parallel")
	if len(actions) != 1 {
		add(st.Line, "a step needs exactly one action (write, link, gro, channels, start, stop, sleep, parallel), got %d: %s",
			len(actions), strings.Join(actions, ", "))
		return
	}
	if st.Every > 0 && st.For == 0 && st.Count == 0 {
		add(st.Line, "every needs for: or count:")
	}
	if (st.For > 0 || st.Count > 0) && st.Every == 0 {
		add(st.Line, "for:/count: need every:")
	}
	for _, l := range append(append([]string{}, st.Start...), st.Stop...) {
		if _, ok := s.Loads[l]; !ok {
			add(st.Line, "no load %q under loads:", l)
		}
	}
	switch {
	case st.Write != nil:
		checkNetns(st.Line, st.Write.Netns)
		if st.Write.Path == "" {
			add(st.Line, "write needs a path")
		}
		if (st.Write.Value == "") == (len(st.Write.Values) == 0) {
			add(st.Line, "write needs value: or values:, not both")
		}
	case st.Link != nil:
		checkNetns(st.Line, st.Link.Netns)
		if st.Link.State != "up" && st.Link.State != "down" && st.Link.State != "toggle" {
			add(st.Line, "link state %q: want up, down or toggle", st.Link.State)
		}
	case st.GRO != nil:
		checkNetns(st.Line, st.GRO.Netns)
	case st.Channels != nil:
		checkNetns(st.Line, st.Channels.Netns)
		if len(st.Channels.Values) == 0 {
			add(st.Line, "channels needs values:")
		}
		for _, v := range st.Channels.Values {
			if v < 1 || v > MaxQueues {
				add(st.Line, "channels %d: want 1-%d", v, MaxQueues)
			}
		}
	}
	for _, c := range st.Parallel {
		s.validateStep(c, checkNetns, add)
	}
}

func (s *Scenario) validateAssert(a *Assert, checkNetns func(int, string), add func(int, string, ...any)) {
	n := 0
	for _, set := range []bool{a.NoSplat != nil, a.Threads != nil, a.NoStall != nil, a.Grows != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		add(a.Line, "an assert needs exactly one of no-splat, threads-while, no-stall, grows")
		return
	}
	switch {
	case a.NoSplat != nil:
		for _, al := range a.NoSplat.Allow {
			if _, err := regexp.Compile(al.Title); err != nil || al.Title == "" {
				add(a.Line, "allow title %q: want a regexp", al.Title)
			}
			if al.Reason == "" {
				add(a.Line, "allow %q needs a reason", al.Title)
			}
		}
	case a.Threads != nil:
		checkNetns(a.Line, a.Threads.Netns)
		if a.Threads.Prefix == "" || a.Threads.Path == "" {
			add(a.Line, "threads-while needs prefix: and path:")
		}
	case a.NoStall != nil:
		if _, ok := s.Loads[a.NoStall.Load]; !ok {
			add(a.Line, "no load %q under loads:", a.NoStall.Load)
		}
		if a.NoStall.Window.D() < 100*time.Millisecond {
			add(a.Line, "no-stall window %v: want at least 100ms", a.NoStall.Window.D())
		}
	case a.Grows != nil:
		if err := CheckMetric(a.Grows.Metric); err != nil {
			add(a.Line, "%v", err)
		}
	}
}

// CheckMetric validates a metric name: softirqs.<NAME>[.cpuN].
func CheckMetric(m string) error {
	parts := strings.Split(m, ".")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "softirqs" {
		return fmt.Errorf("unknown metric %q: want softirqs.<NAME> or softirqs.<NAME>.cpuN", m)
	}
	ok := false
	for _, n := range SoftirqNames {
		ok = ok || parts[1] == n
	}
	if !ok {
		return fmt.Errorf("unknown softirq %q in metric %q (known: %s)", parts[1], m, strings.Join(SoftirqNames, ", "))
	}
	if len(parts) == 3 {
		var cpu int
		if _, err := fmt.Sscanf(parts[2], "cpu%d", &cpu); err != nil || cpu < 0 || cpu >= MaxCPUs {
			return fmt.Errorf("metric %q: want cpuN with N < %d", m, MaxCPUs)
		}
	}
	return nil
}
