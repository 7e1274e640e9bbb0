package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"napilab/results"
	"napilab/results/metrics"
)

// Polls bounds how often a NAPI (or every NAPI of a device) was polled in
// one execution context: softirq, ksoftirqd, kthread, busypoll or any.
type Polls struct {
	NAPI    string      `yaml:"napi"` // <dev>/<napi>, e.g. eth0/rx-0
	Dev     string      `yaml:"dev"`  // every NAPI of the device
	Context PollContext `yaml:"context"`
	CPU     *int        `yaml:"cpu"`
	// Packets counts the packets the polls returned instead of the polls.
	Packets bool     `yaml:"packets"`
	Min     *float64 `yaml:"min"`
	Max     *float64 `yaml:"max"`
}

// Target returns the device and the NAPI ("any" for a whole device).
func (p *Polls) Target() (dev, napi string) {
	if p.Dev != "" {
		return p.Dev, "any"
	}
	i := strings.LastIndexByte(p.NAPI, '/')
	if i < 0 {
		return p.NAPI, ""
	}
	return p.NAPI[:i], p.NAPI[i+1:]
}

// Metric names the polls metric for a context.
func (p *Polls) Metric(context string) string {
	dev, napi := p.Target()
	what := "polls"
	if p.Packets {
		what = "packets"
	}
	m := fmt.Sprintf("napi.%s.%s.%s.%s", what, dev, napi, context)
	if p.CPU != nil {
		m += fmt.Sprintf(".cpu%d", *p.CPU)
	}
	return m
}

// PollContext is one context, or (with each:) the context expected after
// each value the repeated step wrote: {"1": kthread, "0": softirq}.
type PollContext struct {
	Fixed   string
	ByValue map[string]string
}

// UnmarshalYAML takes a scalar or a mapping of values to contexts.
func (c *PollContext) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		c.Fixed = n.Value
		return nil
	case yaml.MappingNode:
		return n.Decode(&c.ByValue)
	}
	return typeError(n, "context: want a context name or a mapping of written values to contexts")
}

// Contexts lists every context the assertion may name.
func (c PollContext) Contexts() []string {
	if c.ByValue == nil {
		return []string{c.Fixed}
	}
	var out []string
	for _, v := range sortedKeys(c.ByValue) {
		out = append(out, c.ByValue[v])
	}
	return out
}

func (x *Polls) check(k *checker, a *Assert) {
	k.polls(a)
	k.bounds(a.Pos, x.Min, x.Max)
}

func (x *Polls) explain(a *Assert) string { return explainPolls(a) }

func (x *Polls) name() string {
	what := "polls"
	if x.Packets {
		what = "packets polled"
	}
	target := x.NAPI
	if x.Dev != "" {
		target = x.Dev
	}
	ctx := x.Context.Fixed
	if ctx == "" {
		ctx = "the expected context"
	}
	return fmt.Sprintf("%s of %s in %s", what, target, ctx)
}

func (x *Polls) timingOnly() bool { return false }

func (x *Polls) metrics() []string {
	var out []string
	for _, ctx := range x.Context.Contexts() {
		out = append(out, x.Metric(ctx))
	}
	return out
}

func (x *Polls) bounds() (min, max *float64) { return x.Min, x.Max }

func (x *Polls) unit() string { return "" }

// context is the fixed context, or the one expected after value.
func (x *Polls) context(value string) (string, bool) {
	if x.Context.ByValue == nil {
		return x.Context.Fixed, true
	}
	ctx := x.Context.ByValue[value]
	return ctx, ctx != ""
}

func (x *Polls) measure(over Between, ctx string, from, to float64) (float64, error) {
	return metricDelta(over, x.Metric(ctx), from, to)
}

func (x *Polls) eval(_ *Scenario, rec Record, a *Assert) results.Assert {
	return evalBound(rec, a.result(x), x.Metric(x.Context.Fixed), x.Min, x.Max, false)
}

// polls checks a polls assertion: one NAPI or one device the topology
// declares, and contexts the lab observes.
func (k *checker) polls(a *Assert) {
	c, p, pl := k.c, a.Pos, a.Polls
	if (pl.NAPI == "") == (pl.Dev == "") {
		c.add(p, "polls needs exactly one of napi: (<dev>/<napi>, e.g. eth0/rx-0) and dev:")
		return
	}
	dev, napi := pl.Target()
	if napi == "" || !metrics.ValidNAPIName(napi) {
		c.add(p, "polls napi %q: want <dev>/rx-<queue>, <dev>/backlog or <dev>/any", pl.NAPI)
		return
	}
	if !k.declared(dev) {
		c.add(p, "polls: no device %q in the topology (nics and veth ends)", dev)
	}
	if q, ok := strings.CutPrefix(napi, "rx-"); ok {
		n, err := strconv.Atoi(q)
		if queues := k.queues(dev); queues > 0 && (err != nil || n >= queues) {
			c.add(p, "polls napi %q: %s has %d queue(s)", pl.NAPI, dev, queues)
		}
	}
	if pl.Context.ByValue != nil && a.Each == "" {
		c.add(p, "polls context by value needs each: (the step whose values pick the context)")
	}
	ctxs := pl.Context.Contexts()
	if len(ctxs) == 0 || slices.Contains(ctxs, "") {
		c.add(p, "polls needs context: one of %s", strings.Join(metrics.PollContexts, ", "))
		return
	}
	for _, ctx := range ctxs {
		if !slices.Contains(metrics.PollContexts, ctx) {
			c.add(p, "polls context %q: want one of %s", ctx, strings.Join(metrics.PollContexts, ", "))
			continue
		}
		if _, err := metrics.Parse(pl.Metric(ctx)); err != nil {
			c.add(p, "%v", err)
		}
	}
}

// explainPolls says whose polls (or polled packets) a polls assertion
// counts, in which context, over which span, and the bounds.
func explainPolls(a *Assert) string {
	p := a.Polls
	what := "polls of "
	if p.Packets {
		what = "packets polled from "
	}
	if p.Dev != "" {
		what += "every NAPI of " + p.Dev
	} else {
		what += p.NAPI
	}
	if p.CPU != nil {
		what += fmt.Sprintf(" on cpu %d", *p.CPU)
	}
	ctx := func(c string) string {
		if c == "any" {
			return "any context"
		}
		return c
	}
	if p.Context.ByValue == nil {
		return fmt.Sprintf("%s in %s, %s: %s%s", what, ctx(p.Context.Fixed), span(a), bounds(p.Min, p.Max), each(a))
	}
	var by []string
	for _, v := range sortedKeys(p.Context.ByValue) {
		by = append(by, fmt.Sprintf("in %s after it set %q", ctx(p.Context.ByValue[v]), v))
	}
	return fmt.Sprintf("%s %s: %s%s, %s", what, span(a), bounds(p.Min, p.Max), each(a), strings.Join(by, " and "))
}
