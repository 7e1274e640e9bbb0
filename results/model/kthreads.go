package model

import (
	"fmt"
	"strings"

	"napilab/results"
)

// checkKthreads judges a rule with kthreads per device and snapshot: once a
// change set every NAPI of the device to a state the rule applies to, and
// the grace passed, the snapshot's thread list may hold none of the
// device's napi/ kthreads. Devices are those a threaded knob names (by
// name: kthreads are not in a namespace, so two devices of one name in
// two namespaces are not judged).
func checkKthreads(r *Rule, knobs []results.Knob, snaps []Snapshot) Outcome {
	o := Outcome{Rule: r}
	devs := map[string]string{} // name -> netns, "" and "\x00" for two
	for _, k := range knobs {
		if k.Kind != results.KnobThreaded {
			continue
		}
		if ns, ok := devs[k.Dev]; ok && ns != k.Netns {
			devs[k.Dev] = "\x00"
			continue
		}
		devs[k.Dev] = k.Netns
	}
	judged := map[string]bool{}
	for i := 1; i < len(snaps); i++ {
		s := snaps[i]
		if s.Threads == nil {
			continue // not read (an older run, or the source failed)
		}
		for dev, ns := range devs {
			if ns == "\x00" {
				continue
			}
			// The whole device: a knob on one queue leaves it unknown.
			st, ok := stateIn(knobs, NAPI{Dev: dev}, s.From, s.To)
			if !r.applies(st) {
				continue
			}
			if !ok {
				o.Unsure++
				continue
			}
			var names []string
			prefix := commPrefix("napi/" + dev + "-")
			for _, t := range s.Threads {
				if strings.HasPrefix(t, prefix) {
					names = append(names, t)
				}
			}
			after := -1.0
			if st.By != nil {
				after = s.From - st.By.Done
			}
			if len(names) > 0 && after >= 0 {
				o.Lags = append(o.Lags, s.To-st.By.Done)
			}
			if after >= 0 && after < r.Grace {
				if len(names) > 0 {
					o.Settling++
					o.Settle = max(o.Settle, s.To-st.By.Done)
				}
				continue
			}
			o.Judged++
			judged[dev] = true
			if len(names) > 0 {
				o.Broken = append(o.Broken, Window{NAPI: NAPI{Dev: dev}, From: s.From, To: s.To, State: st, After: after,
					Threads: names})
			}
		}
	}
	o.NAPIs = len(judged)
	return o
}

// ReadsThreads says a rule on k judges the napi/ kthreads: a run reads
// them with who polled only then.
func ReadsThreads(k Kernel) bool {
	for _, r := range Rules {
		if r.kthreads && (r.kernel == nil || r.kernel(k)) {
			return true
		}
	}
	return false
}

// commPrefix is a kthread name's prefix as the kernel keeps it: a task's
// comm holds 15 bytes (TASK_COMM_LEN).
func commPrefix(p string) string {
	if len(p) > 15 {
		return p[:15]
	}
	return p
}

// describeThreads says what a broken snapshot saw.
func (w Window) describeThreads() string {
	s := fmt.Sprintf("%s: %d napi/ kthreads (%s) at %.2f-%.2fs", w.NAPI.Dev, len(w.Threads), strings.Join(w.Threads, ", "), w.From, w.To)
	if w.After >= 0 {
		s += fmt.Sprintf(", %.2fs after %s", w.After, w.State.describe())
	}
	if m := w.State.ModeBy; m != nil && m != w.State.By {
		s += fmt.Sprintf("; %s", State{By: m}.describe())
	}
	return s
}
