package metrics

import (
	"strings"
	"testing"
)

const pollsText = `eth0 rx-0 softirq 0 0 10 100
eth0 rx-0 ksoftirqd 1 15 5 50
eth0 rx-1 kthread 1 120 7 70
v.1 rx-0 busypoll 0 99 3 0
`

func TestPollMetrics(t *testing.T) {
	s, err := ParseSource(SourceNAPIPolls, pollsText)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		metric string
		want   float64
	}{
		{"napi.polls.eth0.rx-0.softirq", 15}, // ksoftirqd counts as softirq
		{"napi.polls.eth0.rx-0.ksoftirqd", 5},
		{"napi.polls.eth0.rx-0.softirq.cpu0", 10},
		{"napi.polls.eth0.any.any", 22},
		{"napi.packets.eth0.any.kthread", 70},
		{"napi.polls.eth0.rx-1.kthread.cpu1", 7},
		{"napi.polls.eth0.rx-1.softirq", 0}, // never polled there: zero, not missing
		{"napi.polls.eth0.rx-1.kthread.cpu7", 0},
		{"napi.polls.v.1.rx-0.busypoll", 3}, // a device name with a dot
		{"napi.polls.nosuch.any.any", 0},
		{"napi.polls.any.any.any", 25}, // every device
		{"napi.polls.any.any.softirq", 15},
		{"napi.packets.any.any.kthread.cpu1", 70},
		{"napi.polls.any.rx-0.any", 0}, // only whole devices add up
	} {
		m, err := Parse(tc.metric)
		if err != nil {
			t.Fatalf("%s: %v", tc.metric, err)
		}
		if got, ok := m.From(s); !ok || got != tc.want {
			t.Errorf("%s = %v, %v; want %v", tc.metric, got, ok, tc.want)
		}
	}
}

func TestPollMetricErrors(t *testing.T) {
	for _, tc := range []struct{ metric, want string }{
		{"napi.polls.eth0.rx-0.irq", "unknown poll context"},
		{"napi.polls.eth0.queue0.any", "bad napi"},
		{"napi.polls.eth0.any", "want napi.polls.<dev>.<napi>.<context>"},
		{"napi.packets..any.any", "want napi.packets"},
		{"napi.polls.eth0.rx-0.any.cpu99999", "bad cpu"},
	} {
		_, err := Parse(tc.metric)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.metric, err, tc.want)
		}
	}
}

func TestParsePollsRejects(t *testing.T) {
	for _, text := range []string{
		"eth0 rx-0 softirq 0 0 10\n",
		"eth0 rx-0 irq 0 0 10 1\n",
		"eth0 rx-0 softirq x 0 10 1\n",
		"eth0 rx-0 softirq 9000 0 10 1\n",
	} {
		if _, err := ParsePolls(text); err == nil {
			t.Errorf("ParsePolls(%q) accepted", text)
		}
	}
}
