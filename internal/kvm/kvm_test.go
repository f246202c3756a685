package kvm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KVM is used when /dev/kvm opens; a KVM that is PVM (kvm_pvm, which boots
// only kernels built as PVM guests, as on these machines) or none at all
// means emulation, with a note saying why.
func TestDetect(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "kvm")
	sys := filepath.Join(root, "module")
	if a := detect(dev, sys); a.Name != "tcg" || !strings.Contains(a.Note, "no "+dev) {
		t.Errorf("without /dev/kvm: %+v", a)
	}
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(sys, "kvm_intel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if a := detect(dev, sys); a.Name != "kvm" || a.Note != "" {
		t.Errorf("with kvm_intel: %+v", a)
	}
	os.RemoveAll(filepath.Join(sys, "kvm_intel"))
	if err := os.MkdirAll(filepath.Join(sys, "kvm_pvm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if a := detect(dev, sys); a.Name != "tcg" || !strings.Contains(a.Note, "PVM") {
		t.Errorf("with kvm_pvm only: %+v", a)
	}
	t.Setenv("LITTERBOX_VM_ACCEL", "kvm")
	if a := detect(dev, sys); a.Name != "kvm" {
		t.Errorf("LITTERBOX_VM_ACCEL=kvm: %+v", a)
	}
}
