package agent

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/go-multierror"

	"napilab/internal/wire"
)

// irqLine is a numbered IRQ of /proc/interrupts and its action names.
type irqLine struct {
	IRQ   int
	Names []string // "virtio2-input.0"; shared IRQs have several
}

// parseInterrupts returns the numbered IRQs of /proc/interrupts. An IRQ's
// actions are the last column, joined by ", " when the line is shared.
func parseInterrupts(s string) []irqLine {
	var out []irqLine
	for _, line := range strings.Split(s, "\n") {
		num, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		irq, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil {
			continue // NMI, LOC, ... and the header
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		i := len(f) - 1
		for i > 0 && strings.HasSuffix(f[i-1], ",") {
			i--
		}
		names := make([]string, 0, len(f)-i)
		for _, n := range f[i:] {
			names = append(names, strings.TrimSuffix(n, ","))
		}
		out = append(out, irqLine{IRQ: irq, Names: names})
	}
	return out
}

// matchIRQs returns the IRQs with an action name matching re.
func matchIRQs(lines []irqLine, re *regexp.Regexp) []int {
	var irqs []int
	for _, l := range lines {
		for _, n := range l.Names {
			if re.MatchString(n) {
				irqs = append(irqs, l.IRQ)
				break
			}
		}
	}
	return irqs
}

// pinIRQs writes x.CPUs to the smp_affinity_list of every IRQ whose name
// matches x.Match and returns the IRQs changed.
func pinIRQs(x wire.IRQAffinity) ([]int, error) {
	re, err := regexp.Compile(x.Match)
	if err != nil {
		return nil, fmt.Errorf("bad irq match %q: %w", x.Match, err)
	}
	if strings.TrimSpace(x.CPUs) == "" {
		return nil, fmt.Errorf("irq %q: no cpus given", x.Match)
	}
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return nil, err
	}
	lines := parseInterrupts(string(b))
	irqs := matchIRQs(lines, re)
	if len(irqs) == 0 {
		var seen []string
		for _, l := range lines {
			seen = append(seen, l.Names...)
		}
		return nil, fmt.Errorf("no IRQ matches %q; names seen: %s", x.Match, strings.Join(seen, " "))
	}
	var changed []int
	var errs *multierror.Error
	for _, irq := range irqs {
		p := fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq)
		if err := os.WriteFile(p, []byte(x.CPUs), 0); err != nil {
			errs = multierror.Append(errs, fmt.Errorf("pin irq %d to cpus %s: %w", irq, x.CPUs, err))
			continue
		}
		changed = append(changed, irq)
	}
	return changed, errs.ErrorOrNil()
}
