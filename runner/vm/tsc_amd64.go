package vm

// rdtsc reads this CPU's time-stamp counter.
func rdtsc() uint64
