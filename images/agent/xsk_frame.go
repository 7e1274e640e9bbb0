package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Frame layout: Ethernet, IPv4, UDP.
const (
	ethLen     = 14
	ipv4MinLen = 20
	udpHdrLen  = 8
)

var errNotUDP4 = errors.New("not a UDP over IPv4 over Ethernet frame")

// udpReply turns a UDP request frame into its answer in place: MACs, IP
// addresses and ports swapped, TTL reset, both checksums computed afresh
// (a request from a local socket on a veth carries only the pseudo-header
// sum: checksum offload), the payload kept. It returns the answer's length,
// which drops any Ethernet padding.
func udpReply(f []byte) (int, error) {
	if len(f) < ethLen+ipv4MinLen+udpHdrLen || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return 0, errNotUDP4
	}
	ip := f[ethLen:]
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ip[9] != 17 || ihl < ipv4MinLen || total < ihl+udpHdrLen || ethLen+total > len(f) {
		return 0, errNotUDP4
	}
	udp := ip[ihl:total]
	if ulen := int(binary.BigEndian.Uint16(udp[4:])); ulen != len(udp) {
		return 0, fmt.Errorf("udp length %d, ip payload %d", ulen, len(udp))
	}
	swap(f[0:6], f[6:12])
	swap(ip[12:16], ip[16:20])
	swap(udp[0:2], udp[2:4])
	ip[8] = 64
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum(ip[:ihl], 0)))
	binary.BigEndian.PutUint16(udp[6:], 0)
	binary.BigEndian.PutUint16(udp[6:], udpChecksum(ip[12:20], udp))
	return ethLen + total, nil
}

// udpChecksum is the UDP checksum over the pseudo-header (addrs: source
// then destination) and udp, whose checksum field is zero. A sum of zero is
// sent as 0xffff: zero means "no checksum".
func udpChecksum(addrs, udp []byte) uint16 {
	s := sum(addrs, 17+uint32(len(udp)))
	c := ^fold(sum(udp, s))
	if c == 0 {
		return 0xffff
	}
	return c
}

// sum adds b as big-endian 16-bit words (an odd last byte padded) to s.
func sum(b []byte, s uint32) uint32 {
	for ; len(b) >= 2; b = b[2:] {
		s += uint32(b[0])<<8 | uint32(b[1])
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

// fold reduces a 32-bit sum to 16 bits with end-around carries.
func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func swap(a, b []byte) {
	for i := range a {
		a[i], b[i] = b[i], a[i]
	}
}
