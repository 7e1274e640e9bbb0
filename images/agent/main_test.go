package agent

import (
	"testing"

	"napilab/images/agent/agenttest"
)

func TestMain(m *testing.M) { agenttest.Main(m) }
