package commands

import (
	"reflect"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/internal/harnessconf"
)

// The command line offers the harnesses setup knows, no more and no fewer.
func TestSetupHarnessesMatch(t *testing.T) {
	f, _ := reflect.TypeOf(Setup{}).FieldByName("Harness")
	if got, want := f.Tag.Get("enum"), strings.Join(harnessconf.Names, ","); got != want {
		t.Errorf("setup's HARNESS takes %q, harnessconf knows %q", got, want)
	}
	for _, name := range harnessconf.Names {
		if setupNotes[name] == "" {
			t.Errorf("no note for %s", name)
		}
	}
}
