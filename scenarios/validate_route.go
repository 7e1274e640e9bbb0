package scenarios

import (
	"net"
	"slices"
)

// routes checks topology.routes: a network, through a neighbour on a
// subnet the namespace (or the host's side) has an address on, once per
// namespace and network.
func (k *checker) routes() {
	seen := map[string]bool{}
	for _, r := range k.s.Topology.Routes {
		p, where := r.Pos, "netns "+r.Netns
		nets := k.nets[r.Netns]
		switch {
		case r.Host && r.Netns != "":
			k.c.add(p, "route to %s: host and netns exclude each other (host: the host's side of the taps)", r.To)
			continue
		case r.Host:
			where, nets = "the host's side", k.hostNets
		case r.Netns == "":
			where = "the root namespace"
		case !k.netns[r.Netns]:
			k.checkNetns(p, r.Netns)
			continue
		}
		_, to, err := net.ParseCIDR(r.To)
		if err != nil || to.IP.To4() == nil {
			k.c.add(p, "route: to %q: want an IPv4 network, CIDR like 10.113.0.0/24", r.To)
			continue
		}
		via, key := net.ParseIP(r.Via).To4(), where+" "+to.String()
		switch {
		case via == nil:
			k.c.add(p, "route to %s: via %q: want an IPv4 address", r.To, r.Via)
		case !slices.ContainsFunc(nets, func(n *net.IPNet) bool { return n.Contains(via) }):
			k.c.add(p, "route to %s: via %s is on no subnet %s has an address on", r.To, r.Via, where)
		case k.own(r, via):
			k.c.add(p, "route to %s: via %s is an address of %s itself, not a neighbour", r.To, r.Via, where)
		case seen[key]:
			k.c.add(p, "route to %s declared twice in %s", to, where)
		}
		seen[key] = true
	}
}

// own says via is one of the route's namespace's own addresses.
func (k *checker) own(r *Route, via net.IP) bool {
	if r.Host {
		for _, n := range k.s.Topology.NICs {
			if ip, _, err := net.ParseCIDR(n.Host); err == nil && ip.Equal(via) {
				return true
			}
		}
		return false
	}
	ns, ok := k.addrs[via.String()]
	return ok && ns == r.Netns
}

// routed marks a load to an address whose sink is on no subnet of the
// sender's side: it needs a route there and crosses a forwarding
// namespace. Traffic from the host needs a host route to the address.
func (k *checker) routed(l *Load) {
	dst := net.ParseIP(l.SinkAddr)
	nets, where := k.nets[l.From.Netns], "its sender's namespace"
	if l.From.Host {
		nets, where = k.hostNets, "the host's side"
	}
	if slices.ContainsFunc(nets, func(n *net.IPNet) bool { return n.Contains(dst) }) {
		return
	}
	l.Routed = true
	for _, r := range k.s.Topology.Routes {
		_, to, err := net.ParseCIDR(r.To)
		if err == nil && to.Contains(dst) && r.Host == l.From.Host && (r.Host || r.Netns == l.From.Netns) {
			return
		}
	}
	if l.From.Host {
		k.c.add(l.Pos, "load %s: %s is on no subnet of %s: send to a nic (to: {nic: NAME}) or add a host route (topology.routes: {host: true, to: NET, via: NIC-ADDRESS})", l.Name, l.SinkAddr, where)
		return
	}
	k.c.add(l.Pos, "load %s: %s is on no subnet of %s: add a route there (topology.routes: {netns: %s, to: NET, via: NEIGHBOUR})", l.Name, l.SinkAddr, where, l.From.Netns)
}
