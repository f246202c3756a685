package doctor

import "testing"

func TestOldDocker(t *testing.T) {
	for v, want := range map[string]bool{
		"20.10.24+dfsg1": true, "20.10.26": true, "19.03.15": true, "20.9.1": true,
		"20.10.27": false, "23.0.0": false, "28.2.2": false, "27.5.1-ce": false, "": false, "dev": false,
	} {
		if got := oldDocker(v); got != want {
			t.Errorf("oldDocker(%q) = %v, want %v", v, got, want)
		}
	}
}
