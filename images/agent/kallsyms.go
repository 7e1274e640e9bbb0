package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// kallsyms names kernel text addresses from /proc/kallsyms, caching what it
// found; only exact symbol starts are named (poll functions, kprobe targets).
type kallsyms struct {
	names map[uint64]string
}

// name returns the symbol starting at addr, or "" when there is none.
func (k *kallsyms) name(addr uint64) string {
	if addr == 0 {
		return ""
	}
	if n, ok := k.names[addr]; ok {
		return n
	}
	if k.names == nil {
		k.names = map[uint64]string{}
	}
	k.names[addr] = "" // remembered even when absent: one scan per address
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return ""
	}
	defer f.Close()
	want := strconv.FormatUint(addr, 16)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		a, rest, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.TrimLeft(a, "0") != want {
			continue
		}
		if f := strings.Fields(rest); len(f) >= 2 {
			k.names[addr] = f[1]
			return f[1]
		}
	}
	return ""
}
