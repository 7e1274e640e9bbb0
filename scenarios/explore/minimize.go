package explore

import "slices"

// Judge runs a candidate and says whether it still fails with the finding's
// title. An error (the lab could not run it) ends the minimization.
type Judge func(p Program) (bool, error)

// Minimize shrinks a failing program while judge says it still fails:
// delta debugging over the steps (Zeller's ddmin, removing chunks, then
// single steps), then each parallel step replaced by one of its branches or
// by its branches in sequence, then repetitions dropped, then the delay
// probe with its inject steps, then each busy-polling load, and again from the top while any of these
// took something away. Each distinct candidate is judged once.
func Minimize(p Program, judge Judge) (Program, error) {
	seen := map[string]bool{}
	cur := p
	test := func(steps []Step) (bool, error) {
		c := cur
		c.Steps = steps
		key := string(c.YAML("c", ""))
		if ok, done := seen[key]; done {
			return ok, nil
		}
		ok, err := judge(c)
		if err == nil {
			seen[key] = ok
		}
		return ok, err
	}
	for {
		before := cur.Size()
		for _, pass := range []func([]Step, func([]Step) (bool, error)) ([]Step, error){ddmin, unparallel, unrepeat} {
			steps, err := pass(cur.Steps, test)
			cur.Steps = steps
			if err != nil {
				return cur, err
			}
		}
		// drop keeps a smaller cur when it still fails (test judges cur
		// with the steps it is given).
		drop := func(smaller Program) error {
			kept := cur
			cur = smaller
			ok, err := test(cur.Steps)
			if err != nil || !ok {
				cur = kept
			}
			return err
		}
		if cur.Delay != nil {
			c := cur
			c.Delay = nil
			if err := drop(c.sane()); err != nil {
				return cur, err
			}
		}
		for i := len(cur.BusyPoll) - 1; i >= 0; i-- {
			c := cur
			c.BusyPoll = slices.Delete(slices.Clone(cur.BusyPoll), i, i+1)
			if err := drop(c); err != nil {
				return cur, err
			}
		}
		if cur.Size() >= before {
			return cur, nil
		}
	}
}

// ddmin removes chunks of steps, halving the chunks until single steps,
// keeping each removal after which test still fails.
func ddmin(steps []Step, test func([]Step) (bool, error)) ([]Step, error) {
	n := 2
	for len(steps) > 1 {
		chunk := (len(steps) + n - 1) / n
		removed := false
		for start := 0; start < len(steps); start += chunk {
			cand := append(slices.Clone(steps[:start]), steps[min(start+chunk, len(steps)):]...)
			ok, err := test(cand)
			if err != nil {
				return steps, err
			}
			if ok {
				steps, n, removed = cand, max(n-1, 2), true
				break
			}
		}
		if !removed {
			if n >= len(steps) {
				break
			}
			n = min(2*n, len(steps))
		}
	}
	if len(steps) == 1 {
		if ok, err := test(nil); err != nil || ok {
			return nil, err
		}
	}
	return steps, nil
}

// unparallel replaces each parallel step by one of its branches, or by all
// of them in sequence, where the program still fails.
func unparallel(steps []Step, test func([]Step) (bool, error)) ([]Step, error) {
	for i := 0; i < len(steps); i++ {
		if len(steps[i].Branches) == 0 {
			continue
		}
		var cands [][]Step
		for _, br := range steps[i].Branches {
			cands = append(cands, []Step{br})
		}
		cands = append(cands, steps[i].Branches)
		for _, with := range cands {
			cand := slices.Concat(steps[:i], with, steps[i+1:])
			ok, err := test(cand)
			if err != nil {
				return steps, err
			}
			if ok {
				steps = cand
				break
			}
		}
	}
	return steps, nil
}

// unrepeat runs each repeated step once where the program still fails.
func unrepeat(steps []Step, test func([]Step) (bool, error)) ([]Step, error) {
	for i := range steps {
		if steps[i].Repeat == "" {
			continue
		}
		cand := slices.Clone(steps)
		cand[i].Repeat = ""
		ok, err := test(cand)
		if err != nil {
			return steps, err
		}
		if ok {
			steps = cand
		}
	}
	return steps, nil
}
