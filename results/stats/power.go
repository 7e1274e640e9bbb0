package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// medianEfficiency is the asymptotic efficiency of the sample median
// against the mean for normal noise (2/pi): a budget is decided on the
// bootstrap interval of the median ratio, which needs that many more runs
// than a t-test would.
const medianEfficiency = 2 / math.Pi

// RunsNeeded estimates the runs per side a comparison needs to tell a
// relative change of tol from no change, with the two-sided level alpha and
// the given power, when each run's value varies with the coefficient of
// variation cv: n = 2 (z(1-alpha/2) + z(power))^2 cv^2 / tol^2, over the
// median's efficiency, and never fewer than the rank test needs to reach
// p < alpha at all (4 per side at alpha 0.05). It returns 0 when cv or tol
// is not positive or alpha or power is outside (0, 1).
//
//	stats.RunsNeeded(0.05, 0.10, 0.05, 0.8) // 7: 5 % noise, a 10 % budget
func RunsNeeded(cv, tol, alpha, power float64) int {
	if !(cv > 0 && tol > 0 && alpha > 0 && alpha < 1 && power > 0 && power < 1) {
		return 0
	}
	z := distuv.UnitNormal.Quantile(1-alpha/2) + distuv.UnitNormal.Quantile(power)
	n := 2 * z * z * cv * cv / (tol * tol) / medianEfficiency
	floor := minRuns(alpha)
	if math.IsInf(n, 0) || n > 1e6 {
		return 1e6
	}
	return max(floor, int(math.Ceil(n)))
}

// minRuns is the fewest runs per side with which the rank test can reach
// p < alpha at all (4 at alpha 0.05).
func minRuns(alpha float64) int {
	n := 2
	for n < 1000 && cmpMinP(n, n) >= alpha { // bounded: alpha may be 0
		n++
	}
	return n
}
