package agent

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

// kallsyms names kernel text addresses (poll functions, kprobe targets) from
// /proc/kallsyms. Under TCG one pass over the file takes seconds, so the
// agent reads it once, in the background from boot, and lookups wait for it.
type kallsyms struct {
	once  sync.Once
	done  chan struct{}
	names map[uint64]string
}

// load starts reading the file; it returns at once.
func (k *kallsyms) load() {
	k.once.Do(func() {
		k.done = make(chan struct{})
		go func() {
			defer close(k.done)
			k.names = readKallsyms("/proc/kallsyms")
		}()
	})
}

// name returns the text symbol starting at addr, or "".
func (k *kallsyms) name(addr uint64) string {
	k.load()
	<-k.done
	return k.names[addr]
}

// readKallsyms maps the addresses of text symbols to their names.
func readKallsyms(path string) map[uint64]string {
	out := map[uint64]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || (fields[1] != "t" && fields[1] != "T") {
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		if _, seen := out[addr]; !seen {
			out[addr] = fields[2]
		}
	}
	return out
}
