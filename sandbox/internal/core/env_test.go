package core

import "testing"

// LITTERBOX_POOL_REFILL_RATE: a positive, finite rate, else the default (0).
func TestPositiveRate(t *testing.T) {
	for in, want := range map[string]float64{"2": 2, "0.5": 0.5, "": 0, "0": 0, "-1": 0, "x": 0, "+Inf": 0, "NaN": 0} {
		if got := positiveRate(in); got != want {
			t.Errorf("positiveRate(%q) = %v; want %v", in, got, want)
		}
	}
}
