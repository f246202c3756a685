package main

import "testing"

// A row's target prints the ratio it checks: 0.25x is not "0.2x".
func TestMaxRatioText(t *testing.T) {
	for x, want := range map[float64]string{0.25: "<= 0.25x floor", 1.2: "<= 1.2x floor", 2: "<= 2x floor"} {
		if got := maxRatio(x).text; got != want {
			t.Errorf("maxRatio(%v) prints %q, want %q", x, got, want)
		}
	}
}
