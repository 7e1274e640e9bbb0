package scenarios

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"napilab/internal/names"
	"napilab/internal/wire"
	"napilab/results/metrics"
)

// Limits of the lab guest (NR_CPUS in kernels/configs/base.config).
const (
	MaxCPUs   = 8
	MaxQueues = 8
)

// Sources a sampler may name; qdisc:<netns>, napi:<netns>, threads:<prefix>, tasks:<prefix> and file:<path> also work.
var Sources = []string{wire.SourceSoftirqs, wire.SourceSoftnet, wire.SourceInterrupts, wire.SourceSNMP, wire.SourceNetdev, wire.SourceQdisc, wire.SourceNAPI}

// DefaultDeadline bounds every action that sets none.
const DefaultDeadline = 10 * time.Second

func (s *Scenario) setDefaults() {
	if s.Machine.CPUs == 0 {
		s.Machine.CPUs = 2
	}
	if s.Machine.MemoryMB == 0 {
		s.Machine.MemoryMB = 256
	}
	s.resolveInjects()
	if s.Perf != nil {
		s.Perf.setDefaults()
	}
	if s.Defaults.Deadline == 0 {
		s.Defaults.Deadline = Duration(DefaultDeadline)
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
	eachStep(s.Timeline, func(st *Step) {
		_, acts := st.held()
		for _, a := range acts {
			if d, ok := a.(defaulter); ok {
				d.setDefaults()
			}
		}
	})
	for _, a := range s.Asserts {
		if x, _ := a.kind(); x != nil {
			if d, ok := x.(defaulter); ok {
				d.setDefaults()
			}
		}
	}
}

// resolvePositions turns the combined line numbers of included files back
// into file:line:col.
func (s *Scenario) resolvePositions(f files) {
	fix := func(p *Pos) { *p = f.resolve(p.Line, p.Col) }
	for _, n := range s.Topology.NICs {
		fix(&n.Pos)
	}
	for _, v := range s.Topology.Veths {
		fix(&v.Pos)
	}
	for _, r := range s.Topology.Routes {
		fix(&r.Pos)
	}
	for _, l := range s.Loads {
		fix(&l.Pos)
	}
	for _, sm := range s.Samplers {
		fix(&sm.Pos)
	}
	eachStep(s.Timeline, func(st *Step) { fix(&st.Pos) })
	for _, a := range s.Asserts {
		fix(&a.Pos)
	}
	for _, in := range s.Inject {
		fix(&in.Pos)
	}
	fix(&s.Kernel.Pos)
	if s.Perf != nil {
		fix(&s.Perf.Pos)
		for _, b := range s.Perf.Budgets {
			fix(&b.Pos)
		}
	}
	for n, f := range s.Flavours {
		fix(&f.Pos)
		s.Flavours[n] = f
	}
}

var devName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

// checker validates one scenario, remembering what the topology declares.
type checker struct {
	s     *Scenario
	c     *collector
	top   Pos
	netns map[string]bool
	addrs map[string]string // guest address -> netns
	onDev map[string]string // guest address -> device
	devs  map[string]bool   // netns/name
	nics  map[string]*NIC
	idx   *topoIndex // built on first use
	// nets are the subnets each namespace has an address on; hostNets the
	// host's side of the taps.
	nets     map[string][]*net.IPNet
	hostNets []*net.IPNet
}

func (s *Scenario) validate(c *collector, params map[string]string) {
	s.Values = params
	k := &checker{s: s, c: c, top: Pos{File: s.Path, Line: 1, Col: 1},
		netns: map[string]bool{"": true}, addrs: map[string]string{}, devs: map[string]bool{}, nics: map[string]*NIC{},
		onDev: map[string]string{}, nets: map[string][]*net.IPNet{}}
	if s.Name == "" {
		c.add(k.top, "missing name")
	} else if err := names.Check(s.Name); err != nil {
		c.add(s.namePos, "%v", err)
	}
	if n := s.Machine.CPUs; n < 1 || n > MaxCPUs {
		c.add(k.keyPos(k.top, "machine", "cpus"), "machine.cpus %d: want 1-%d", n, MaxCPUs)
	}
	if m := s.Machine.MemoryMB; m < 64 || m > 16384 {
		c.add(k.keyPos(k.top, "machine", "memory_mb"), "machine.memory_mb %d: want 64-16384", m)
	}
	if i := s.Machine.Image; i != "" && i != ImageAgent && i != ImageDebian {
		c.add(k.keyPos(k.top, "machine", "image"), "machine.image %q: want %s or %s", i, ImageAgent, ImageDebian)
	}
	if f := s.Machine.Flavour; f != "" && f != FlavourDebug {
		c.add(k.top, "machine.flavour %q: want %s (kselftest steps pick the kselftest flavour themselves)", f, FlavourDebug)
	}
	for _, n := range s.Topology.Netns {
		if k.netns[n] {
			c.add(k.top, "netns %q declared twice", n)
		}
		k.netns[n] = true
	}
	k.flavours(params)
	k.topology()
	k.routes()
	for _, name := range sortedKeys(s.Loads) {
		k.load(s.Loads[name])
	}
	for _, sm := range s.Samplers {
		if !knownSource(sm.Source) {
			c.add(sm.Pos, "unknown sampler source %q (known: %s, qdisc:<netns>, napi:<netns>, threads:<prefix>, tasks:<prefix>, sched:<prefix>, file:<path>)", sm.Source, strings.Join(Sources, ", "))
		}
		if ns, ok := metrics.SourceNetns(sm.Source); ok {
			k.checkNetns(sm.Pos, ns)
		}
		if sm.Every.D() < 10*time.Millisecond {
			c.add(sm.Pos, "sampler %s: every %v: want at least 10ms", sm.Source, sm.Every.D())
		}
	}
	if len(s.Timeline) == 0 && !s.written.steps[""] {
		c.add(k.keyPos(k.top, "timeline"), "empty timeline")
	}
	for _, st := range s.Timeline {
		k.step(st)
	}
	for _, a := range s.Asserts {
		k.assert(a)
	}
	k.injects()
	k.invariants()
	k.kernelReq()
	k.perf()
}

// keyPos is where the key at path (mapping keys from the top) is written,
// or fallback when the file does not write it.
func (k *checker) keyPos(fallback Pos, path ...string) Pos {
	n := k.s.root
	var key *yaml.Node
	for _, name := range path {
		if n == nil {
			return fallback
		}
		key, n = keyNode(n, name), valueNode(n, name)
	}
	if key == nil {
		return fallback
	}
	return k.c.files.resolve(key.Line, key.Column)
}

// fieldPos is where key: value is written inside the item at p (an
// assertion, a step), or p.
func (k *checker) fieldPos(p Pos, key, value string) Pos {
	item := findAt(k.s.root, p, k.c.files)
	if item == nil {
		return p
	}
	if kn := findKey(item, key, value, 3); kn != nil {
		return k.c.files.resolve(kn.Line, kn.Column)
	}
	return p
}

// findAt is the mapping written at p.
func findAt(n *yaml.Node, p Pos, f files) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.MappingNode && f.resolve(n.Line, n.Column) == p {
		return n
	}
	for _, c := range n.Content {
		if m := findAt(c, p, f); m != nil {
			return m
		}
	}
	return nil
}

// findKey is the key node key whose scalar value is value, depth mappings down.
func findKey(n *yaml.Node, key, value string, depth int) *yaml.Node {
	if n == nil || depth == 0 || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := n.Content[i], n.Content[i+1]; k.Value == key && v.Kind == yaml.ScalarNode && v.Value == value {
			return k
		}
	}
	for i := 1; i < len(n.Content); i += 2 {
		if kn := findKey(n.Content[i], key, value, depth-1); kn != nil {
			return kn
		}
	}
	return nil
}

func (k *checker) checkNetns(p Pos, ns string) {
	if !k.netns[ns] {
		k.c.add(p, "netns %q is not declared under topology.netns", ns)
	}
}

func (k *checker) checkDev(p Pos, ns, name, cidr string) {
	if !devName.MatchString(name) {
		k.c.add(p, "device name %q: want 1-15 letters, digits, . _ -", name)
	}
	if name == metrics.AllDevices {
		k.c.add(p, "device name %q is reserved: napi.polls.any.any.<context> sums every device", name)
	}
	if k.devs[ns+"/"+name] {
		k.c.add(p, "device %q declared twice", name)
	}
	k.devs[ns+"/"+name] = true
	if cidr != "" {
		ip, sub, err := net.ParseCIDR(cidr)
		if err != nil {
			k.c.add(p, "address %q: want CIDR like 10.0.0.1/24", cidr)
			return
		}
		k.nets[ns] = append(k.nets[ns], sub)
		k.addrs[ip.String()] = ns
		k.onDev[ip.String()] = name
	}
}

var featureName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// checkFeatures checks ethtool feature names (the kernel says whether the
// device has them when the topology is built).
func (k *checker) checkFeatures(p Pos, fs map[string]bool) {
	for _, f := range sortedKeys(fs) {
		if !featureName.MatchString(f) {
			k.c.add(p, "feature %q: want an ethtool -k name such as tx-tcp-segmentation", f)
		}
	}
}

// checkRef checks that a step or assertion names a declared device.
func (k *checker) checkRef(p Pos, ns, dev string) {
	k.checkNetns(p, ns)
	if dev == "" {
		k.c.add(p, "missing dev")
	} else if !k.devs[ns+"/"+dev] && k.netns[ns] {
		where := "the root namespace"
		if ns != "" {
			where = "netns " + ns
		}
		k.c.add(p, "no device %q in %s (declare it under topology)", dev, where)
	}
}

func (k *checker) topology() {
	for _, n := range k.s.Topology.NICs {
		k.checkDev(n.Pos, "", n.Name, n.Address)
		k.checkFeatures(n.Pos, n.Features)
		k.nics[n.Name] = n
		if n.Queues < 1 || n.Queues > MaxQueues {
			k.c.add(n.Pos, "nic %s: queues %d: want 1-%d", n.Name, n.Queues, MaxQueues)
		}
		if _, err := net.ParseMAC(n.MAC); err != nil {
			k.c.add(n.Pos, "nic %s: bad mac %q", n.Name, n.MAC)
		}
		if n.Host != "" {
			if _, sub, err := net.ParseCIDR(n.Host); err != nil {
				k.c.add(n.Pos, "nic %s: host address %q: want CIDR", n.Name, n.Host)
			} else {
				k.hostNets = append(k.hostNets, sub)
			}
		}
	}
	for _, v := range k.s.Topology.Veths {
		k.checkNetns(v.Pos, v.Netns)
		k.checkNetns(v.Pos, v.Peer.Netns)
		k.checkDev(v.Pos, v.Netns, v.Name, v.Address)
		k.checkDev(v.Pos, v.Peer.Netns, v.Peer.Name, v.Peer.Address)
		k.checkFeatures(v.Pos, v.Features)
		k.checkFeatures(v.Pos, v.Peer.Features)
		if v.Netns != v.Peer.Netns && v.Netns != "" && v.Peer.Netns == "" {
			k.c.add(v.Pos, "veth %s: put the root-namespace end first", v.Name)
		}
		if v.Queues < 0 || v.Queues > MaxQueues {
			k.c.add(v.Pos, "veth %s: queues %d: want 1-%d", v.Name, v.Queues, MaxQueues)
		}
	}
}

func knownSource(src string) bool {
	for _, p := range []string{"threads:", "tasks:", wire.PrefixSched, "file:", wire.PrefixQdisc, metrics.NAPIPrefix} {
		if strings.HasPrefix(src, p) && len(src) > len(p) {
			return true
		}
	}
	return contains(Sources, src)
}

func (k *checker) load(l *Load) {
	c, p := k.c, l.Pos
	if !contains([]string{"udp", "tcp", "rr", "xsk"}, l.Kind) {
		c.add(p, "load %s: kind %q: want udp, tcp, rr or xsk", l.Name, l.Kind)
	}
	if l.Kind == "rr" && !contains([]string{"", "udp", "tcp"}, l.Proto) || l.Kind != "rr" && l.Proto != "" {
		c.add(p, "load %s: proto %q: rr loads take udp or tcp, other kinds none", l.Name, l.Proto)
	}
	if l.OpenLoop && (!l.HasLatency() || l.Proto == "tcp" || l.Rate <= 0) {
		c.add(p, "load %s: open_loop needs an rr client over udp (kind rr or an xsk rr load) and a rate", l.Name)
	}
	if l.From.Host && l.Kind != "udp" && l.Kind != "xsk" {
		c.add(p, "load %s: only udp and xsk loads can come from the host", l.Name)
	}
	if l.To.Port < 1 || l.To.Port > 65535 {
		c.add(p, "load %s: to.port %d: want 1-65535", l.Name, l.To.Port)
	}
	if l.Flows < 1 || l.Flows > 1024 {
		c.add(p, "load %s: flows %d: want 1-1024", l.Name, l.Flows)
	}
	if l.Rate < 0 {
		c.add(k.keyPos(p, "loads", l.Name, "rate"), "load %s: rate %d: want 0 (as fast as it can) or more", l.Name, l.Rate)
	}
	if l.BusyPoll < 0 {
		c.add(k.keyPos(p, "loads", l.Name, "busy_poll"), "load %s: busy_poll %d: want 0 (off) or more µs", l.Name, l.BusyPoll)
	}
	if l.Size < 0 || l.Size > 65000 {
		c.add(k.keyPos(p, "loads", l.Name, "size"), "load %s: size %d: want 1-65000 bytes (0: the default 64)", l.Name, l.Size)
	}
	for _, cpu := range []*int{l.CPU, l.SinkCPU} {
		if cpu != nil && (*cpu < 0 || *cpu >= k.s.Machine.CPUs) {
			c.add(p, "load %s: cpu %d: the machine has %d cpus", l.Name, *cpu, k.s.Machine.CPUs)
		}
	}
	k.sinkSched(l)
	switch {
	case l.To.NIC != "":
		n, ok := k.nics[l.To.NIC]
		if !ok {
			c.add(p, "load %s: no nic %q under topology.nics", l.Name, l.To.NIC)
			return
		}
		ip, _, err := net.ParseCIDR(n.Address)
		if err != nil {
			c.add(p, "load %s: nic %s has no address", l.Name, n.Name)
			return
		}
		l.SinkAddr, l.SinkDev = ip.String(), n.Name
		if l.From.Host && n.Host == "" {
			c.add(p, "load %s: traffic from the host needs nic %s to have a host: address", l.Name, n.Name)
		}
	case l.To.Address != "":
		ns, ok := k.addrs[l.To.Address]
		if !ok {
			c.add(p, "load %s: no device in the topology has address %s", l.Name, l.To.Address)
			return
		}
		l.SinkAddr, l.SinkNetns, l.SinkDev = l.To.Address, ns, k.onDev[l.To.Address]
		k.routed(l)
	default:
		c.add(p, "load %s: to needs an address or a nic", l.Name)
	}
	k.xsk(l)
	if !l.From.Host {
		k.checkNetns(p, l.From.Netns)
	}
}

// dropEmpty removes null entries (a bare "-" or "~") from every list and
// map, reporting each, so later passes never meet a nil.
func (s *Scenario) dropEmpty(c *collector) {
	top := Pos{File: s.Path, Line: 1, Col: 1}
	s.Topology.NICs = dropNil(s.Topology.NICs, func() { c.add(top, "empty entry under topology.nics") })
	s.Topology.Veths = dropNil(s.Topology.Veths, func() { c.add(top, "empty entry under topology.veths") })
	s.Topology.Routes = dropNil(s.Topology.Routes, func() { c.add(top, "empty entry under topology.routes") })
	s.Samplers = dropNil(s.Samplers, func() { c.add(top, "empty entry under samplers") })
	s.Asserts = dropNil(s.Asserts, func() { c.add(top, "empty entry under asserts") })
	for name, l := range s.Loads {
		if l == nil {
			c.add(top, "load %q is empty", name)
			delete(s.Loads, name)
		}
	}
	var steps func([]*Step) []*Step
	steps = func(ss []*Step) []*Step {
		ss = dropNil(ss, func() { c.add(top, "empty step in the timeline") })
		for _, st := range ss {
			st.Parallel = steps(st.Parallel)
		}
		return ss
	}
	s.Timeline = steps(s.Timeline)
	if s.Perf != nil {
		s.Perf.Budgets = dropNil(s.Perf.Budgets, func() { c.at(s.Perf.Pos.Line, s.Perf.Pos.Col, "empty entry under perf.budgets") })
	}
}

func dropNil[T any](list []*T, report func()) []*T {
	out := list[:0]
	for _, x := range list {
		if x == nil {
			report()
			continue
		}
		out = append(out, x)
	}
	return out
}
