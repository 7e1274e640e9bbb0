package kernels

// Who waits for whom in a cache shared by several lab processes.
//
//   - <root>/lock is a readers-writer lock. Every build, source
//     preparation, kselftest build and unpack holds it shared, so any
//     number of them run at once; GC holds it exclusively, so it never
//     sees anything half-built and its rule "a .tmp- folder is an
//     interrupted build's" holds. Waiters poll, so a waiting GC never
//     holds up a build.
//   - <root>/locks/<kind>.<name>.lock serialize the work on one key, each
//     taken with the cache lock held, kernel keys before src keys:
//     kernel.<spec> guards work/<spec> and the publishing of
//     kernels/<spec>-*: its build holds it exclusively, a variant's build
//     holds its base's shared (the variant is seeded from the base's work
//     dir and make mounts over its path). src.<dir> guards the making of
//     src/<dir>, a pristine extraction or a patched copy; published trees
//     never change, so their readers hold nothing. selftests.<dir> guards
//     one kselftest install.
//   - Each holder of a key lock writes a note beside it (pid, process
//     start time, what it does) so that a waiter can say whom it waits
//     for. The flock is the truth: notes are read only while the lock is
//     taken, and a note whose process is gone is ignored.
//   - Users of a published kernel (a run booting it, pack reading it) Hold
//     its bzImage shared; GC removes an artifact only after taking that
//     exclusively without waiting, and skips it when it cannot.
//   - ccache is shared by all builds; ccache locks its own files.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

var (
	// lockPoll is how often a blocked lock retries.
	lockPoll = 250 * time.Millisecond
	// waitReportEvery is how often a waiter says again what it waits for.
	waitReportEvery = 30 * time.Second
)

// lockReq is one lock to take.
type lockReq struct {
	// path is the lock file.
	path string
	// name is what the lock guards, for messages ("stock-6.12").
	name string
	// doing says what the holder does with it ("being built"), in its note.
	doing string
	// shared takes a shared instead of an exclusive lock.
	shared bool
	// noNote skips the holder note (the shared cache lock: its holders
	// note the keys they hold).
	noNote bool
	// holders lists whom a waiter waits for.
	holders func() []holderNote
	// wait, if set, receives what the lock waits for: once, then every
	// waitReportEvery.
	wait func(msg string)
}

// holderNote is what a lock holder writes beside the lock.
type holderNote struct {
	// Pid is the holder's process.
	Pid int `json:"pid"`
	// ProcStart is the process's start time (/proc/<pid>/stat), so that a
	// reused pid is not taken for the holder.
	ProcStart uint64 `json:"proc_start"`
	// Since is when the lock was taken.
	Since time.Time `json:"since"`
	// Name is what the lock guards.
	Name string `json:"name"`
	// Doing says what the holder does with it.
	Doing string `json:"doing"`
}

// String is the note as a waiter says it: "stock-6.12 being built by pid 42 since 3m12s".
func (h holderNote) String() string {
	return fmt.Sprintf("%s %s by pid %d since %s", h.Name, h.Doing, h.Pid, time.Since(h.Since).Round(time.Second))
}

// noteSeq numbers this process's notes: one process may hold a key twice.
var noteSeq atomic.Int64

// takeLock takes the lock, waiting until it is free or ctx ends, and writes
// the holder note. Callers must call the returned release function, which
// removes the note before it unlocks. A waiter that gives up leaves nothing.
func takeLock(ctx context.Context, r lockReq) (release func(), err error) {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create lock dir: %w", err)
	}
	// Read-only is enough for flock, and lets another user share a lock file.
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_RDONLY, 0o666)
	if err != nil {
		return nil, fmt.Errorf("failed to open lock: %w", err)
	}
	how := unix.LOCK_EX
	if r.shared {
		how = unix.LOCK_SH
	}
	var reported time.Time
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("failed to lock %s: %w", r.path, err)
		}
		if r.wait != nil && time.Since(reported) >= waitReportEvery {
			r.wait(waitMessage(r))
			reported = time.Now()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("failed to lock %s: %w", r.path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
	note := ""
	if !r.noNote {
		note = fmt.Sprintf("%s.%d-%d.holder", r.path, os.Getpid(), noteSeq.Add(1))
		h := holderNote{Pid: os.Getpid(), ProcStart: procStart(os.Getpid()), Since: time.Now(), Name: r.name, Doing: r.doing}
		if err := writeJSON(note, h); err != nil {
			f.Close()
			return nil, err
		}
	}
	return func() {
		if note != "" {
			os.Remove(note)
		}
		f.Close() // closing the last descriptor unlocks
	}, nil
}

// waitMessage says what a blocked lock waits for.
func waitMessage(r lockReq) string {
	var hs []holderNote
	if r.holders != nil {
		hs = r.holders()
	} else {
		hs = readNotes(r.path)
	}
	if len(hs) == 0 {
		return fmt.Sprintf("waiting for %s (held by a process that left no note)", r.name)
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.String()
	}
	return "waiting for " + strings.Join(parts, "; ")
}

// readNotes returns the notes of the live holders of the lock at path, oldest first.
func readNotes(path string) []holderNote {
	files, _ := filepath.Glob(globQuote(path) + ".*.holder")
	return liveNotes(files)
}

// liveNotes reads note files, keeps those whose process lives, oldest first.
func liveNotes(files []string) []holderNote {
	var out []holderNote
	for _, f := range files {
		data, err := os.ReadFile(f)
		var h holderNote
		if err != nil || json.Unmarshal(data, &h) != nil || !h.alive() {
			continue
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// alive says whether the note's process still runs (and is the same process).
func (h holderNote) alive() bool {
	if h.Pid <= 0 || unix.Kill(h.Pid, 0) == unix.ESRCH {
		return false
	}
	return h.ProcStart == 0 || procStart(h.Pid) == h.ProcStart
}

// procStart returns a process's start time in clock ticks since boot, 0 when unknown.
func procStart(pid int) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields after it.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 { // starttime is field 22, the 20th after the name
		return 0
	}
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}

// globMeta matches the characters filepath.Glob treats specially.
var globMeta = regexp.MustCompile(`[*?\[\\]`)

// globQuote escapes s for filepath.Glob.
func globQuote(s string) string { return globMeta.ReplaceAllString(s, `\$0`) }

// lockCache takes an exclusive lock on path, waiting until it is free or
// ctx ends, with no note. Callers must call the returned release function.
func lockCache(ctx context.Context, path string) (func(), error) {
	return takeLock(ctx, lockReq{path: path, name: path, noNote: true})
}

// keyFileRe matches the characters kept in a key's lock file name.
var keyFileRe = regexp.MustCompile(`[^A-Za-z0-9._+-]`)

// keyLockPath is the lock file of one key: kind "kernel", "src" or "selftests".
func (l layout) keyLockPath(kind, name string) string {
	return filepath.Join(l.locksDir(), kind+"."+keyFileRe.ReplaceAllString(name, "_")+".lock")
}

// lockKey takes the lock of one key (see the top of this file), exclusive
// unless shared, noting doing; wait receives what it waits for.
func (l layout) lockKey(ctx context.Context, kind, name, doing string, shared bool, wait func(string)) (func(), error) {
	return takeLock(ctx, lockReq{path: l.keyLockPath(kind, name), name: name, doing: doing, shared: shared, wait: wait})
}

// shareCache holds the cache lock shared, as every builder does; a
// waiter waits for GC.
func (l layout) shareCache(ctx context.Context, wait func(string)) (func(), error) {
	return takeLock(ctx, lockReq{path: l.lockFile(), name: "the cache", shared: true, noNote: true, wait: wait,
		holders: func() []holderNote { return readNotes(l.lockFile()) }})
}

// ownCache holds the cache lock exclusively (GC), noting it; a waiter
// names the builds it waits for.
func (l layout) ownCache(ctx context.Context, doing string, wait func(string)) (func(), error) {
	return takeLock(ctx, lockReq{path: l.lockFile(), name: "the cache", doing: doing, wait: wait,
		holders: func() []holderNote {
			files, _ := filepath.Glob(filepath.Join(l.locksDir(), "*.holder"))
			return liveNotes(files)
		}})
}
