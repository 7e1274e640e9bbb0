package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"napilab/results"
)

// The KCIDB export follows the I/O schema v4.3 of kernelci/kcidb-io
// (kcidb_io/schema/v04_03.py): checkouts, builds and tests linked by
// "origin:..." ids, test paths of [.a-zA-Z0-9_-], statuses FAIL ERROR MISS
// PASS DONE SKIP, no null values, log excerpts up to 16384 characters.
const (
	kcidbMajor      = 4
	kcidbMinor      = 3
	kcidbOrigin     = "napilab"
	kcidbExcerptMax = 16384
	kcidbArch       = "x86_64" // the lab boots qemu-system-x86_64 only
)

type kcidbData struct {
	Version   kcidbVersion    `json:"version"`
	Checkouts []kcidbCheckout `json:"checkouts"`
	Builds    []kcidbBuild    `json:"builds"`
	Tests     []kcidbTest     `json:"tests"`
}

type kcidbVersion struct {
	Major int `json:"major"`
	Minor int `json:"minor"`
}

type kcidbCheckout struct {
	ID        string         `json:"id"`
	Origin    string         `json:"origin"`
	Comment   string         `json:"comment,omitempty"`
	StartTime string         `json:"start_time,omitempty"`
	Valid     bool           `json:"valid"`
	Misc      map[string]any `json:"misc,omitempty"`
}

type kcidbBuild struct {
	ID           string         `json:"id"`
	CheckoutID   string         `json:"checkout_id"`
	Origin       string         `json:"origin"`
	Comment      string         `json:"comment,omitempty"`
	StartTime    string         `json:"start_time,omitempty"`
	Architecture string         `json:"architecture"`
	ConfigName   string         `json:"config_name,omitempty"`
	Valid        bool           `json:"valid"`
	Misc         map[string]any `json:"misc,omitempty"`
}

type kcidbTest struct {
	ID          string            `json:"id"`
	BuildID     string            `json:"build_id"`
	Origin      string            `json:"origin"`
	Path        string            `json:"path"`
	Comment     string            `json:"comment,omitempty"`
	Status      string            `json:"status"`
	StartTime   string            `json:"start_time,omitempty"`
	Duration    float64           `json:"duration,omitempty"`
	LogExcerpt  string            `json:"log_excerpt,omitempty"`
	Environment *kcidbEnvironment `json:"environment,omitempty"`
	Misc        map[string]any    `json:"misc,omitempty"`
}

type kcidbEnvironment struct {
	Comment string         `json:"comment,omitempty"`
	Misc    map[string]any `json:"misc,omitempty"`
}

// WriteKCIDB writes the run as KCIDB I/O data (schema v4.3): one checkout
// and one build for the kernel (both named by its build cache key, the
// build's config_name is the kernel spec), a test for the whole run at path
// "napilab.<scenario>", and one test per assertion, hang and lab failure at
// "napilab.<scenario>.<name>" with the measured value and the bound in misc.
// Test ids are "napilab:<key prefix>-<run start>:<n>", unique per run.
func WriteKCIDB(w io.Writer, r *results.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(kcidb(r))
}

func kcidb(r *results.Result) kcidbData {
	key := r.Kernel.Key
	if key == "" {
		key = "unbuilt-" + kcidbPathPart(r.Kernel.Spec)
	}
	src := kcidbOrigin + ":" + key
	start := kcidbTime(r.Started)
	kmisc := kcidbMisc("spec", r.Kernel.Spec, "release", r.Kernel.Release, "key", r.Kernel.Key)
	d := kcidbData{
		Version: kcidbVersion{kcidbMajor, kcidbMinor},
		Checkouts: []kcidbCheckout{{ID: src, Origin: kcidbOrigin, Valid: true,
			Comment: "napilab kernel " + r.Kernel.Spec, Misc: kmisc}},
		Builds: []kcidbBuild{{ID: src, CheckoutID: src, Origin: kcidbOrigin, Architecture: kcidbArch,
			ConfigName: r.Kernel.Spec, Valid: r.Kernel.Key != "", Comment: strings.TrimSpace(r.Kernel.Spec + " " + r.Kernel.Release),
			Misc: kcidbMisc("spec", r.Kernel.Spec, "release", r.Kernel.Release, "bzimage", r.Kernel.BzImage)}},
	}
	runID := fmt.Sprintf("%s:%s-%s", kcidbOrigin, kcidbShort(key), r.Started.UTC().Format("20060102T150405.000000000Z"))
	suite := "napilab." + kcidbPathPart(r.Scenario)
	env := &kcidbEnvironment{Comment: strings.TrimSpace("QEMU " + r.Accel)}
	test := func(n int, path, status, comment string) kcidbTest {
		return kcidbTest{ID: fmt.Sprintf("%s:%d", runID, n), BuildID: src, Origin: kcidbOrigin, Path: path,
			Status: status, Comment: comment, StartTime: start, Environment: env}
	}

	figures := map[string]any{}
	for k, v := range r.Figures {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			figures[k] = v
		}
	}
	var splats []string
	for _, s := range r.Splats {
		splats = append(splats, s.Title)
	}
	whole := test(0, suite, kcidbStatus(r.Verdict), fmt.Sprintf("%s on %s: %s", r.Scenario, r.Kernel.Spec, r.Verdict))
	whole.Duration = r.Timings.Total
	whole.LogExcerpt = kcidbExcerpt(strings.Join(r.Reasons, "\n"))
	whole.Environment = &kcidbEnvironment{Comment: env.Comment,
		Misc: kcidbMisc("accel", r.Accel, "qemu", r.QEMU, "image", r.Image)}
	whole.Misc = kcidbMisc("scenario_file", r.ScenarioFile, "seed", r.Seed, "params", r.Params,
		"reasons", r.Reasons, "splats", splats, "figures", figures,
		"flaky", r.Flaky, "retry_of", retryDir(r.RetryOf), "retried_in", r.RetriedIn,
		"timings", map[string]any{"boot": r.Timings.Boot, "timeline": r.Timings.Timeline, "total": r.Timings.Total})
	d.Tests = append(d.Tests, whole)

	for _, c := range repCases(r) {
		t := test(len(d.Tests), suite+"."+kcidbPathPart(c.name), c.status, c.name)
		t.LogExcerpt = kcidbExcerpt(c.excerpt)
		t.Misc = c.misc
		d.Tests = append(d.Tests, t)
	}
	return d
}

func retryDir(r *results.Retry) string {
	if r == nil {
		return ""
	}
	return r.Dir
}

func kcidbStatus(v results.Verdict) string {
	switch v {
	case results.Pass:
		return "PASS"
	case results.Fail:
		return "FAIL"
	}
	return "ERROR"
}

// kcidbMisc builds a misc object from key, value pairs, leaving out empty
// values: the schema allows no nulls.
func kcidbMisc(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		switch x := v.(type) {
		case string:
			if x == "" {
				continue
			}
		case []string:
			if len(x) == 0 {
				continue
			}
		case map[string]string:
			if len(x) == 0 {
				continue
			}
		case map[string]any:
			if len(x) == 0 {
				continue
			}
		case bool:
			if !x {
				continue
			}
		case nil:
			continue
		}
		m[kv[i].(string)] = v
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

var kcidbPathBad = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// kcidbPathPart makes s one component of a test path: no dots, only
// [a-zA-Z0-9_-], runs of anything else as one "_".
func kcidbPathPart(s string) string {
	s = strings.Trim(kcidbPathBad.ReplaceAllString(s, "_"), "_")
	if s == "" {
		return "unnamed"
	}
	return s
}

func kcidbShort(key string) string {
	if len(key) > 16 {
		return key[:16]
	}
	return key
}

func kcidbTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// kcidbExcerpt keeps the last kcidbExcerptMax characters of s: the end of a
// log is what explains its outcome.
func kcidbExcerpt(s string) string {
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > kcidbExcerptMax {
		r := []rune(s)
		s = string(r[n-kcidbExcerptMax:])
	}
	return s
}
