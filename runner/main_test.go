package runner

import (
	"testing"

	"napilab/images/agent/agenttest"
)

// TestMain: the in-process guest's agent mounts sysfs (inprocess_test.go).
func TestMain(m *testing.M) { agenttest.Main(m) }
