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

// The table's header says the machine's load at the start and at the end of
// the run (every figure here moves with it); none where /proc/loadavg is
// not.
func TestLoadText(t *testing.T) {
	for _, c := range []struct{ start, end, want string }{
		{"13.34 21.37 17.74 5/612 4242\n", "20.12 21.58 18.19 3/600 4300\n", "load 13.3 at the start, 20.1 at the end"},
		{"0.50 0.40 0.30 1/100 1\n", "", "load 0.5 at the start"},
		{"", "", ""},
		{"garbage", "", ""},
	} {
		if got := loadText(c.start, c.end); got != c.want {
			t.Errorf("loadText(%q, %q) = %q, want %q", c.start, c.end, got, c.want)
		}
	}
}
