//go:build !amd64

package runner

// rdtsc is 0: no TSC to read, so no delay-loop preset (see hostTSCkHz).
func rdtsc() uint64 { return 0 }
