package splat

import (
	"regexp"
	"strconv"
	"strings"

	"napilab/results"
)

// Leak is one object kmemleak reported: a splat titled after the first
// frame of its allocation backtrace that is not an allocator ("memory leak
// in __netif_set_xps_queue"), and the jiffies of its allocation.
type Leak struct {
	results.Splat
	Jiffies uint64
}

// ParseKmemleak reads the text of /sys/kernel/debug/kmemleak, one Leak per
// unreferenced object. Line and Time are unset: the report comes from
// debugfs, not the console.
func ParseKmemleak(text []byte) []Leak {
	var out []Leak
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, leak(cur))
			cur = nil
		}
	}
	for _, line := range strings.Split(string(text), "\n") {
		line = strings.TrimRight(line, "\r")
		start := leakStartRe.MatchString(line)
		if start {
			flush()
		}
		if (start || len(cur) > 0) && len(cur) < splatMaxLines {
			cur = append(cur, line)
		}
	}
	flush()
	return out
}

var (
	leakStartRe   = regexp.MustCompile(`^unreferenced object 0x[0-9a-f]+ \(size \d+\):`)
	leakJiffiesRe = regexp.MustCompile(`, jiffies (\d+)`)
	leakFrameRe   = regexp.MustCompile(`^\s+(?:\[<[0-9a-f]+>\]\s+)?([A-Za-z_][\w.]*)\+0x[0-9a-f]+`)
	// leakAlloc matches allocator frames, which never explain a leak.
	leakAlloc = regexp.MustCompile(`^(?:` + strings.Join([]string{
		`kmemleak_\w+`, `__?kmalloc\w*`, `kmalloc\w*`, `kzalloc\w*`, `kcalloc\w*`, `__?kvmalloc\w*`,
		`kvzalloc\w*`, `krealloc\w*`, `kmemdup\w*`, `kstrdup\w*`, `kmem_cache_alloc\w*`, `__kmem_cache_alloc\w*`,
		`slab_\w+`, `__slab_\w+`, `___slab_\w+`, `__do_kmalloc\w*`, `_?_?alloc_pages\w*`, `__get_free_pages`,
		`__?vmalloc\w*`, `vzalloc\w*`, `pcpu_\w+`, `__?alloc_percpu\w*`, `kmalloc_reserve`,
		`__?alloc_skb\w*`, `__netdev_alloc_skb`, `__napi_alloc_skb`, `napi_alloc_skb`, `netdev_alloc_skb`,
		`alloc_skb_with_frags`, `__?build_skb\w*`, `napi_build_skb`, `stack_depot_save\w*`, `kasan_\w+`, `__kasan_\w+`,
	}, "|") + `)$`)
)

func leak(lines []string) Leak {
	l := Leak{Splat: results.Splat{Type: results.CrashMemoryLeak, Title: "memory leak", Time: -1, Report: strings.Join(lines, "\n") + "\n"}}
	if m := leakJiffiesRe.FindStringSubmatch(strings.Join(lines[:min(len(lines), 3)], "\n")); m != nil {
		l.Jiffies, _ = strconv.ParseUint(m[1], 10, 64)
	}
	first := ""
	for _, line := range lines {
		m := leakFrameRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fn := splatClean(m[1])
		if first == "" {
			first = fn
		}
		if !leakAlloc.MatchString(fn) {
			l.Frame = fn
			break
		}
	}
	if l.Frame == "" {
		l.Frame = first
	}
	if l.Frame != "" {
		l.Title += " in " + l.Frame
	}
	return l
}

// Group folds splats of the same title into the first, counting them.
func Group(splats []results.Splat) []results.Splat {
	var out []results.Splat
	at := map[string]int{}
	for _, s := range splats {
		if i, ok := at[s.Title]; ok {
			out[i].Count++
			continue
		}
		at[s.Title] = len(out)
		s.Count = 1
		out = append(out, s)
	}
	return out
}
