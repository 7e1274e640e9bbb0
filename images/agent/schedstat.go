package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// sched lists "pid run_ns voluntary involuntary comm" for every task whose
// comm starts with prefix, sorted by pid: the ns it ran (schedstat with
// CONFIG_SCHED_INFO, else se.sum_exec_runtime of the sched file, which
// CONFIG_SCHED_DEBUG gives) and its voluntary (it slept) and involuntary (it
// was preempted) context switches (status). The comm comes last: it may
// hold spaces. A task whose run time cannot be read is left out.
func sched(prefix string) string {
	return taskLines(func(pid int, dir string) (string, bool) {
		st, err := readTaskSched(dir)
		if err != nil || !strings.HasPrefix(st.comm, prefix) {
			return "", false // exited, or not one of ours
		}
		return fmt.Sprintf("%d %d %d %d %s", pid, st.runNs, st.voluntary, st.involuntary, st.comm), true
	})
}

// taskSched is what sched reads of one task.
type taskSched struct {
	comm                   string
	runNs                  uint64
	voluntary, involuntary uint64
}

func readTaskSched(dir string) (taskSched, error) {
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return taskSched{}, err
	}
	st, err := parseStat(string(stat))
	if err != nil {
		return taskSched{}, err
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return taskSched{}, err
	}
	out := taskSched{comm: st.Comm}
	if ss, err := os.ReadFile(dir + "/schedstat"); err == nil {
		out.runNs, err = parseRunNs(string(ss))
		if err != nil {
			return taskSched{}, err
		}
	} else if sd, err := os.ReadFile(dir + "/sched"); err == nil {
		if out.runNs, err = parseSumExec(sd); err != nil {
			return taskSched{}, err
		}
	} else {
		return taskSched{}, err
	}
	out.voluntary, out.involuntary, err = parseSwitches(status)
	return out, err
}

// parseRunNs reads the first field of a schedstat line: ns on a CPU.
func parseRunNs(s string) (uint64, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return 0, fmt.Errorf("bad schedstat %q", s)
	}
	return strconv.ParseUint(f[0], 10, 64)
}

// parseSumExec reads se.sum_exec_runtime (ms with six decimals) of a
// /proc/PID/sched file as ns.
func parseSumExec(b []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "se.sum_exec_runtime" {
			continue
		}
		ms, frac, _ := strings.Cut(strings.TrimSpace(v), ".")
		frac = (frac + "000000")[:6]
		whole, err1 := strconv.ParseUint(ms, 10, 64)
		part, err2 := strconv.ParseUint(frac, 10, 64)
		if err1 != nil || err2 != nil {
			return 0, fmt.Errorf("bad se.sum_exec_runtime %q", v)
		}
		return whole*1e6 + part, nil
	}
	return 0, fmt.Errorf("sched has no se.sum_exec_runtime")
}

// parseSwitches reads voluntary_ctxt_switches and nonvoluntary_ctxt_switches
// of a /proc/PID/status file.
func parseSwitches(status []byte) (voluntary, involuntary uint64, err error) {
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch k {
		case "voluntary_ctxt_switches":
			dst = &voluntary
		case "nonvoluntary_ctxt_switches":
			dst = &involuntary
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("bad %s: %w", k, err)
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("status has no context switch counts")
	}
	return voluntary, involuntary, nil
}
