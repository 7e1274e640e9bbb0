package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Files of a run folder the model reads; the report package names the others.
const (
	ResultFile  = "result.json"
	SamplesFile = "samples.jsonl"
)

// maxFolderName bounds the name part of a run folder (file names stop at 255 bytes).
const maxFolderName = 160

// NewRunDir creates a new, empty run folder directly under root, named
// after the time and name, and returns its path. Characters of name other
// than letters, digits and ._=,+- become '-', so the folder is under root
// whatever name holds. It never reuses a folder: when the name is taken
// (two runs in one second) it adds -2, -3, ...
func NewRunDir(root, name string) (string, error) {
	return newRunDir(root, name, time.Now())
}

func newRunDir(root, name string, now time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("failed to create the results folder: %w", err)
	}
	base := filepath.Join(root, now.Format("20060102-150405")+"-"+folderName(name))
	for i := 1; i <= 1000; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("failed to create the run folder: %w", err)
		}
	}
	return "", fmt.Errorf("failed to create the run folder: %s and 999 suffixed names are taken", base)
}

// folderName maps a run name onto one safe path element.
func folderName(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._=,+-", c) >= 0
		if !ok {
			b[i] = '-'
		}
	}
	if len(b) > maxFolderName {
		b = b[:maxFolderName]
	}
	if len(b) == 0 {
		return "run"
	}
	return string(b)
}

// MetricsGroup is the sampler group of the snapshots taken before and
// after the timeline.
const MetricsGroup = "metrics"

// SettleGroup is the sampler group of the reads after the last metrics
// snapshot that wait until what the udp loads sent stopped arriving.
const SettleGroup = "settle"

// SampleLine is one line of a run's samples.jsonl: one snapshot taken for a
// sampler group.
type SampleLine struct {
	Group  string         `json:"group"`  // the sampler group, e.g. "softirqs" or "metrics"
	Host   float64        `json:"host"`   // seconds since the timeline began
	Sample SampleSnapshot `json:"sample"` // what the guest read
}

// SampleSnapshot is every source read at (nearly) the same instant.
type SampleSnapshot struct {
	T      float64           `json:"t"`                // guest uptime, seconds
	Took   float64           `json:"took,omitempty"`   // seconds from the first read to the last
	Values map[string]string `json:"values"`           // source -> raw text, e.g. "softirqs" -> /proc/softirqs
	Errors map[string]string `json:"errors,omitempty"` // source -> why it could not be read
}

// MaxSamplesFile bounds a run's samples.jsonl: the runner keeps at most
// this much of the guest's samples (in memory and on disk), ReadSamples
// reads no more.
const MaxSamplesFile = 64 << 20

// ReadSamples reads a samples.jsonl file: a regular file (not through a
// link) of at most MaxSamplesFile bytes.
func ReadSamples(path string) ([]SampleLine, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() || fi.Size() > MaxSamplesFile {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, int64(MaxSamplesFile))
	}
	var out []SampleLine
	dec := json.NewDecoder(io.LimitReader(f, MaxSamplesFile))
	for {
		var s SampleLine
		if err := dec.Decode(&s); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("%s: sample %d: %w", path, len(out)+1, err)
		}
		out = append(out, s)
	}
}

// LoadRun reads a run folder: its result.json and, when present, its
// samples.jsonl (a run that ended before its timeline has none).
func LoadRun(dir string) (*Result, []SampleLine, error) {
	r, err := Read(filepath.Join(dir, ResultFile))
	if err != nil {
		return nil, nil, err
	}
	samples, err := ReadSamples(filepath.Join(dir, SamplesFile))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return r, samples, err
}
