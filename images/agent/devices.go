package agent

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"napilab/internal/wire"
)

// devices lists every network device of every namespace with the facts a
// scenario can check: state, threaded mode, queue counts, NAPI kthreads.
func (a *agent) devices() []wire.Device {
	a.ns.mu.Lock()
	names := []string{""}
	for n := range a.ns.byName {
		names = append(names, n)
	}
	a.ns.mu.Unlock()
	sort.Strings(names)
	threads := strings.Split(threads("napi/"), "\n")
	var out []wire.Device
	for _, ns := range names {
		root := a.ns.path(ns, "/sys/class/net")
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			dir := filepath.Join(root, e.Name())
			d := wire.Device{Name: e.Name(), Netns: ns, OperState: readTrim(dir + "/operstate"), Threaded: readTrim(dir + "/threaded")}
			qs, _ := os.ReadDir(dir + "/queues")
			for _, q := range qs {
				switch {
				case strings.HasPrefix(q.Name(), "rx-"):
					d.RxQueues++
				case strings.HasPrefix(q.Name(), "tx-"):
					d.TxQueues++
				}
			}
			prefix := "napi/" + d.Name + "-"
			for _, t := range threads {
				if _, comm, ok := strings.Cut(t, " "); ok && strings.HasPrefix(prefix, comm) || ok && strings.HasPrefix(comm, prefix) {
					d.NAPI = append(d.NAPI, comm)
				}
			}
			out = append(out, d)
		}
	}
	return out
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
