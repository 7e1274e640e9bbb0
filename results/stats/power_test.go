package stats

import "testing"

func TestRunsNeeded(t *testing.T) {
	for _, c := range []struct {
		cv, tol, alpha float64
		want           int
	}{
		{0.05, 0.10, 0.05, 7},  // 2*2.80^2*0.0025/0.01/0.6366 = 6.2
		{0.01, 0.10, 0.05, 4},  // the rank test's floor: 2/C(8,4) = 0.029 < 0.05, 2/C(6,3) = 0.1
		{0.10, 0.05, 0.05, 99}, // 4x the variance ratio of the first case, x4 again
		{0.05, 0.10, 0.01, 10}, // a stricter level: z 2.58+0.84, floor 5 (2/C(10,5) = 0.008)
		{0, 0.10, 0.05, 0},
		{0.05, 0, 0.05, 0},
	} {
		if got := RunsNeeded(c.cv, c.tol, c.alpha, 0.8); got != c.want {
			t.Errorf("RunsNeeded(cv %g, tol %g, alpha %g) = %d, want %d", c.cv, c.tol, c.alpha, got, c.want)
		}
	}
}
