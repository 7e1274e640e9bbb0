package agent

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"napilab/internal/nsthread"
	"napilab/internal/wire"
)

// namespaces owns the guest's named network namespaces. Each has its own
// sysfs mounted under /run/napilab/ns/<name>/sys so /sys/class/net paths
// resolve to that namespace's devices. The name "" is the root namespace:
// the threads' own, unless the agent created one for it (Options.Netns).
type namespaces struct {
	mu     sync.Mutex
	byName map[string]netns.NsHandle
	dir    string // holds <name>/sys
}

func newNamespaces() *namespaces {
	return &namespaces{byName: map[string]netns.NsHandle{}, dir: "/run/napilab/ns"}
}

func (n *namespaces) sysRoot(name string) string {
	if name == "" {
		name = "root"
	}
	return n.dir + "/" + name + "/sys"
}

// own says whether the agent created netns name ("" only in Options.Netns).
func (n *namespaces) own(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.byName[name]
	return ok
}

// create makes a new named namespace with loopback up and its own sysfs.
func (n *namespaces) create(name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.byName[name]; ok {
		return nil
	}
	var h netns.NsHandle
	err := nsthread.Run(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare netns %s: %w", name, err)
		}
		return nil
	}, func() error {
		var err error
		if h, err = netns.Get(); err != nil {
			return err
		}
		dir := n.sysRoot(name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("sysfs", dir, "sysfs", 0, ""); err != nil {
			return err
		}
		if lo, lerr := netlink.LinkByName("lo"); lerr == nil {
			return netlink.LinkSetUp(lo)
		}
		return nil
	})
	if err != nil {
		return err
	}
	n.byName[name] = h
	return nil
}

func (n *namespaces) get(name string) (netns.NsHandle, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.byName[name]
	if !ok {
		return 0, fmt.Errorf("no netns %q", name)
	}
	return h, nil
}

// in runs fn on a thread inside netns name ("" = root namespace).
func (n *namespaces) in(name string, fn func() error) error {
	if name == "" && !n.own("") {
		return fn()
	}
	h, err := n.get(name)
	if err != nil {
		return err
	}
	return nsthread.Run(func() error {
		if err := netns.Set(h); err != nil {
			return fmt.Errorf("enter netns %s: %w", name, err)
		}
		return nil
	}, fn)
}

// handle returns a netlink handle bound to netns name.
func (n *namespaces) handle(name string) (*netlink.Handle, error) {
	if name == "" && !n.own("") {
		return netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	h, err := n.get(name)
	if err != nil {
		return nil, err
	}
	return netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
}

// path maps a path to what it means inside netns name.
func (n *namespaces) path(name, p string) string {
	if (name != "" || n.own("")) && strings.HasPrefix(p, "/sys/") {
		return n.sysRoot(name) + p[len("/sys"):]
	}
	// /proc/net is the main thread's namespace, not the one this thread
	// entered (nor the agent's own root).
	if (name != "" || n.own("")) && strings.HasPrefix(p, "/proc/net/") {
		return "/proc/thread-self/net/" + p[len("/proc/net/"):]
	}
	return p
}

// close unmounts the namespaces' sysfs and drops them: the end of an agent
// that is not the guest's init (Options.Netns).
func (n *namespaces) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, h := range n.byName {
		if err := unix.Unmount(n.sysRoot(name), unix.MNT_DETACH); err != nil {
			logf("unmount %s: %v", n.sysRoot(name), err)
		}
		h.Close()
		delete(n.byName, name)
	}
}

func (n *namespaces) writeFile(f wire.File) error {
	if f.Path == wire.FaultPath {
		return injectFault(f.Value)
	}
	return n.in(f.Netns, func() error {
		fd, err := os.OpenFile(n.path(f.Netns, f.Path), os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = fd.Write([]byte(f.Value))
		if cerr := fd.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %q to %s: %w", f.Value, f.Path, err)
		}
		return nil
	})
}

func (n *namespaces) readFile(f wire.File) (string, error) {
	var s string
	err := n.in(f.Netns, func() error {
		b, err := os.ReadFile(n.path(f.Netns, f.Path))
		s = string(b)
		return err
	})
	return s, err
}

func (n *namespaces) linkUpDown(ns, dev string, up bool) error {
	h, err := n.handle(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("link %s: %w", dev, err)
	}
	if up {
		return h.LinkSetUp(l)
	}
	return h.LinkSetDown(l)
}

// feature switches an ethtool feature such as rx-gro.
func (n *namespaces) feature(ns, dev, feature string, on bool) error {
	return n.in(ns, func() error {
		e, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer e.Close()
		if err := e.Change(dev, map[string]bool{feature: on}); err != nil {
			return fmt.Errorf("ethtool %s %s %v: %w", dev, feature, on, err)
		}
		return nil
	})
}

// ethtoolStats reads a device's ethtool -S counters, "name value" lines
// sorted by name.
func (n *namespaces) ethtoolStats(ns, dev string) (string, error) {
	var st map[string]uint64
	err := n.in(ns, func() error {
		e, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer e.Close()
		if st, err = e.Stats(dev); err != nil {
			return fmt.Errorf("ethtool -S %s: %w", dev, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	lines := make([]string, 0, len(st))
	for _, k := range slices.Sorted(maps.Keys(st)) {
		lines = append(lines, fmt.Sprintf("%s %d", k, st[k]))
	}
	return strings.Join(lines, "\n"), nil
}

// channels sets the combined channel count (ethtool -L).
func (n *namespaces) channels(ns, dev string, combined int) error {
	return n.in(ns, func() error {
		e, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer e.Close()
		c, err := e.GetChannels(dev)
		if err != nil {
			return fmt.Errorf("ethtool -l %s: %w", dev, err)
		}
		c.CombinedCount = uint32(combined)
		if _, err := e.SetChannels(dev, c); err != nil {
			return fmt.Errorf("ethtool -L %s combined %d: %w", dev, combined, err)
		}
		return nil
	})
}

// injectFault fails with the probability written to wire.FaultPath: a
// test-only switch that lets the lab's own tests see flaky runs. The coin
// comes from the kernel's CRNG (getrandom): over 16 batches of 40 guests at
// p=0.5 its failure counts spread as a binomial's (chi-square 11.4 on 16
// degrees of freedom), while math/rand/v2's spread twice as wide (33.1),
// which made the lab's flake-rate test flaky.
func injectFault(value string) error {
	p, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || p < 0 || p > 1 {
		return fmt.Errorf("%s wants a probability 0..1, got %q", wire.FaultPath, value)
	}
	// A 32-bit draw against threshold(p), as the probes draw; rand.Read
	// never fails (it blocks until the CRNG is ready).
	var b [4]byte
	rand.Read(b[:])
	if uint64(binary.LittleEndian.Uint32(b[:])) < threshold(p) {
		return faultError{p}
	}
	return nil
}

// faultError is an injected failure that stands for a kernel refusing the
// write (EIO), so that it counts as the kernel's in the verdict.
type faultError struct{ p float64 }

func (e faultError) Error() string { return fmt.Sprintf("injected fault (p=%g)", e.p) }
func (e faultError) Unwrap() error { return syscall.EIO }
