package main

import (
	"errors"
	"io"
	"os"
	"time"

	"napilab/images/wire"
)

// kmemleakFile is kmemleak's debugfs control file (debug kernels only).
const kmemleakFile = "/sys/kernel/debug/kmemleak"

// kmemleakMinAge is kmemleak's MSECS_MIN_AGE: it never reports an object
// younger than this, and an object must also keep its checksum across two
// scans, hence the scan, wait, scan of a report.
const kmemleakMinAge = 5 * time.Second

func hasKmemleak() bool {
	_, err := os.Stat(kmemleakFile)
	return err == nil
}

// kmemleak scans (a write of "scan" returns when the scan is done), then
// forgets the leaks found (Clear) or waits out the minimum age, scans again
// and reads the report.
func kmemleak(k wire.Kmemleak) (*wire.KmemleakReport, error) {
	start := time.Now()
	if !hasKmemleak() {
		return nil, errors.New("this kernel has no kmemleak (" + kmemleakFile + ")")
	}
	cmd := func(c string) error { return os.WriteFile(kmemleakFile, []byte(c), 0) }
	if err := cmd("scan"); err != nil {
		return nil, err
	}
	if k.Clear {
		if err := cmd("clear"); err != nil {
			return nil, err
		}
		return &wire.KmemleakReport{Seconds: time.Since(start).Seconds()}, nil
	}
	time.Sleep(kmemleakMinAge)
	if err := cmd("scan"); err != nil {
		return nil, err
	}
	f, err := os.Open(kmemleakFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A leaking kernel can report without end: keep a bounded head.
	data, err := io.ReadAll(io.LimitReader(f, wire.OutputMax))
	if err != nil {
		return nil, err
	}
	return &wire.KmemleakReport{Report: string(data), Seconds: time.Since(start).Seconds()}, nil
}
