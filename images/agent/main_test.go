package agent

import (
	"testing"

	"napilab/images/agent/agenttest"
)

func TestMain(m *testing.M) { agenttest.Main(m) }

// TestStartTime: the process's start, read from /proc/self/stat, is on the
// uptime clock, before now and not long before (this test starts within the
// minute; a wrong field would give a pid, a page count or 0).
func TestStartTime(t *testing.T) {
	start, now := startTime(), uptime()
	if start <= 0 || start > now || now-start > 60 {
		t.Errorf("start %.2fs, uptime %.2fs: want start within the minute before now", start, now)
	}
}
