package stats

import (
	"math"
	"testing"
)

func TestNoise(t *testing.T) {
	var s []Sample
	for i, v := range []float64{90, 100, 110, 100, 100} {
		s = append(s, Sample{Metric: "b.pps", Run: i + 1, Value: v}, Sample{Metric: "a.zero", Run: i + 1, Value: 0})
	}
	s = append(s, Sample{Metric: "b.pps", Run: 6, Value: math.NaN()})
	rows := Noise(s)
	if len(rows) != 2 || rows[0].Metric != "a.zero" || rows[1].Metric != "b.pps" {
		t.Fatalf("rows %+v", rows)
	}
	if !math.IsNaN(rows[0].CV) || !math.IsNaN(rows[0].RobustCV) {
		t.Errorf("a metric at 0 has no CV: %+v", rows[0])
	}
	p := rows[1]
	// sd of 90,100,110,100,100 is sqrt(50) = 7.07; quartiles 100..100.
	if p.Summary.N != 5 || math.Abs(p.CV-0.0707) > 1e-3 || p.RobustCV != 0 {
		t.Errorf("b.pps: %+v", p)
	}
}
