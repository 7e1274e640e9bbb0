package model

import (
	"slices"
	"strings"

	"napilab/results/metrics"
)

// lineKey is a who-polled counter without its NAPI's name.
type lineKey struct {
	dev, ctx string
	cpu, pid int
}

// named renames, in the snapshots before it happened, each NAPI the agent
// first named by its address (rx@a9b800, before it knew the queue) to the
// name it gave it later (rx-0). A counter whose name changes is the same
// counter: left as it was, its whole count would land in the window where
// the name changed (a threaded NAPI "polled by softirq" seconds after the
// polls happened). The later name is the one new NAPI of the device whose
// counters hold every counter of the vanished one, each at least as high.
// snaps is not changed.
func named(snaps []Snapshot) []Snapshot {
	out := slices.Clone(snaps)
	for i := 1; i < len(out); i++ {
		before, after := napisOf(out[i-1].Lines), napisOf(out[i].Lines)
		for old, lines := range before {
			if _, still := after[old]; still || !strings.Contains(old.Name, "@") {
				continue
			}
			var to []NAPI
			for n, now := range after {
				if _, was := before[n]; !was && n.Dev == old.Dev && holds(now, lines) {
					to = append(to, n)
				}
			}
			if len(to) != 1 {
				continue
			}
			for j := range i {
				out[j].Lines = rename(out[j].Lines, old, to[0].Name)
			}
		}
	}
	return out
}

// napisOf groups the lines by NAPI.
func napisOf(lines []metrics.PollLine) map[NAPI]map[lineKey]uint64 {
	m := map[NAPI]map[lineKey]uint64{}
	for _, l := range lines {
		n := NAPI{Dev: l.Dev, Name: l.NAPI}
		if m[n] == nil {
			m[n] = map[lineKey]uint64{}
		}
		m[n][lineKey{l.Dev, l.Context, l.CPU, l.PID}] += l.Polls
	}
	return m
}

// holds says whether every counter of was is in now, at least as high.
func holds(now, was map[lineKey]uint64) bool {
	for k, v := range was {
		if w, ok := now[k]; !ok || w < v {
			return false
		}
	}
	return true
}

// rename gives the lines of NAPI from the name to (a copy).
func rename(lines []metrics.PollLine, from NAPI, to string) []metrics.PollLine {
	out := slices.Clone(lines)
	for i := range out {
		if out[i].Dev == from.Dev && out[i].NAPI == from.Name {
			out[i].NAPI = to
		}
	}
	return out
}
