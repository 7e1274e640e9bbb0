package campaign

import "testing"

func TestExpandMatrix(t *testing.T) {
	sets, err := ExpandMatrix(map[string]string{"period": "50ms"}, []string{"queues=1,2,4", "cpus=1,2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 6 {
		t.Fatalf("%d sets, want 3x2", len(sets))
	}
	seen := map[string]bool{}
	for _, s := range sets {
		if s["period"] != "50ms" {
			t.Errorf("fixed parameter lost: %v", s)
		}
		seen[paramSuffix(s)] = true
	}
	if len(seen) != 6 || !seen["-cpus=2-period=50ms-queues=4"] {
		t.Errorf("combinations: %v", seen)
	}
	if _, err := ExpandMatrix(nil, []string{"queues"}); err == nil {
		t.Error("a matrix without values was accepted")
	}
}
