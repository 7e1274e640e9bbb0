package results

import (
	"regexp"
	"strconv"
	"strings"
)

// ParseKmemleak turns the text of /sys/kernel/debug/kmemleak into one splat
// per unreferenced object, titled after the first frame of its allocation
// backtrace that is not an allocator ("memory leak in veth_xdp_rcv"), with
// the object's age at the time of reading in Age. Line and Time are unset:
// the report comes from debugfs, not the console.
func ParseKmemleak(text []byte) []Splat {
	var out []Splat
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, leakSplat(cur))
			cur = nil
		}
	}
	for _, line := range strings.Split(string(text), "\n") {
		line = strings.TrimRight(line, "\r")
		if leakStartRe.MatchString(line) {
			flush()
		}
		if len(cur) > 0 || leakStartRe.MatchString(line) {
			if len(cur) < splatMaxLines {
				cur = append(cur, line)
			}
		}
	}
	flush()
	return out
}

var (
	leakStartRe = regexp.MustCompile(`^unreferenced object 0x[0-9a-f]+ \(size \d+\):`)
	leakAgeRe   = regexp.MustCompile(`\(age (\d+\.\d+)s\)`)
	leakFrameRe = regexp.MustCompile(`^\s+(?:\[<[0-9a-f]+>\]\s+)?([A-Za-z_][\w.]*)\+0x[0-9a-f]+`)
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

func leakSplat(lines []string) Splat {
	sp := Splat{Type: CrashMemoryLeak, Title: "memory leak", Time: -1,
		Report: strings.Join(lines, "\n") + "\n"}
	if m := leakAgeRe.FindStringSubmatch(strings.Join(lines[:min(len(lines), 3)], "\n")); m != nil {
		sp.Age, _ = strconv.ParseFloat(m[1], 64)
	}
	first := ""
	for _, l := range lines {
		m := leakFrameRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		fn := splatClean(m[1])
		if first == "" {
			first = fn
		}
		if !leakAlloc.MatchString(fn) {
			sp.Frame = fn
			break
		}
	}
	if sp.Frame == "" {
		sp.Frame = first
	}
	if sp.Frame != "" {
		sp.Title += " in " + sp.Frame
	}
	return sp
}
