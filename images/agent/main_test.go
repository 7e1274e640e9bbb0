package agent

import (
	"testing"

	"napilab/images/agent/agenttest"
)

func TestMain(m *testing.M) { agenttest.Main(m) }

// TestInitRecord: the kernel's record of running init dates the agent's
// exec; other records do not.
func TestInitRecord(t *testing.T) {
	for _, tc := range []struct {
		rec string
		at  float64
		ok  bool
	}{
		{"6,812,145236,-;Run /init as init process\n", 0.145236, true},
		{"6,813,145240,-;Run /sbin/init as init process\n", 0.14524, true},
		{"6,814,145240,-;  with arguments:\n", 0, false},
		{"6,815,145240,-;Run your own tests\n", 0, false},
		{"garbage", 0, false},
	} {
		at, ok := initRecord(tc.rec)
		if ok != tc.ok || at != tc.at {
			t.Errorf("initRecord(%q) = %v, %v; want %v, %v", tc.rec, at, ok, tc.at, tc.ok)
		}
	}
}
