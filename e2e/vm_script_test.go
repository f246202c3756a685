package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/provider/vm"
)

// vmMissing says why the VM engine cannot run here; "" when it can.
func vmMissing() string {
	if _, _, err := vm.Runnable(vm.DefaultImageDir()); err != nil {
		return err.Error()
	}
	return ""
}

// vmScript reports whether a script is one of the VM engine's journeys,
// which only TestScriptsVM runs.
func vmScript(name string) bool { return strings.HasPrefix(name, "vm_") }

// TestScriptsVM runs the vm_*.txtar journeys with --engine vm (through
// LITTERBOX_ENGINE): each script's repository gets a VM of its own, which
// boots (emulated where KVM cannot run Debian's kernel: minutes) and whose
// idle stop is 5 minutes, so a VM a failed script leaves stops by itself.
// Skipped unless the VM engine can run (see the vm condition), and with
// -short.
func TestScriptsVM(t *testing.T) {
	if testing.Short() {
		t.Skip("the VM engine boots a VM per script")
	}
	if why := vmMissing(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the VM engine cannot run: %s", why)
		}
		t.Skipf("the VM engine cannot run: %s", why)
	}
	testscript.Run(t, scriptParams(t, vmScript, "LITTERBOX_ENGINE=vm", "LITTERBOX_VM_IDLE=5m", "LITTERBOX_VM_IMAGE_DIR="+vm.DefaultImageDir()))
}

// condVM is the script condition vm (scriptcmds_test.go).
func condVM() (bool, error) {
	why := vmMissing()
	return neededInCI(why == "", "CI=true but the VM engine cannot run: %s", why)
}
