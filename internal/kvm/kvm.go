// Package kvm says how a virtual machine can run on this machine: under
// KVM, or emulated (qemu's TCG). The VM engine (provider/vm) runs its VMs
// so, and doctor reports it whatever the engine.
package kvm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Accel is how qemu runs the VM: "kvm", or "tcg" (emulation, many times
// slower), with Note saying why not KVM.
type Accel struct {
	Name string `json:"name"`
	Note string `json:"note,omitempty"`
}

// Detect finds how VMs can run on this machine.
// LITTERBOX_VM_ACCEL=kvm or tcg decides instead.
func Detect() Accel { return detect("/dev/kvm", "/sys/module") }

func detect(dev, modules string) Accel {
	if a := os.Getenv("LITTERBOX_VM_ACCEL"); a != "" {
		return Accel{Name: a, Note: "LITTERBOX_VM_ACCEL=" + a}
	}
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return Accel{Name: "tcg", Note: fmt.Sprintf("no %s to use (%v): the VM runs emulated, many times slower than under KVM; enable KVM (a kvm_intel or kvm_amd module, access to %s) for speed", dev, errors.Unwrap(err), dev)}
	}
	f.Close()
	exists := func(m string) bool { _, err := os.Stat(filepath.Join(modules, m)); return err == nil }
	if exists("kvm_pvm") && !exists("kvm_intel") && !exists("kvm_amd") {
		return Accel{Name: "tcg", Note: "KVM here is PVM (kvm_pvm), which boots only kernels built as PVM guests, and the image's Debian kernel is not one: the VM runs emulated, many times slower"}
	}
	return Accel{Name: "kvm"}
}
