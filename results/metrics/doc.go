// Package metrics parses what the guest agent samples (/proc/softirqs,
// /proc/interrupts, /proc/net/softnet_stat, /proc/net/snmp, /proc/net/dev,
// the qdisc and napi-get netlink dumps, the napi_polls BPF counts, task CPU
// times) into Series, and the metric names scenarios use into the source
// and field to read (Parse, Known).
//
//	ref, err := metrics.Parse("softnet.received_rps.cpu1")
//	s, err := metrics.ParseSource(ref.Source, text)
//	v, ok := ref.From(s)
package metrics
