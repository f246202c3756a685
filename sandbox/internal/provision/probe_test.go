package provision

import (
	"context"
	"testing"

	"github.com/litterbox-dev/litterbox/provider"
)

// TestImageProbeOnlyForItsImage: the inspection started beside the checks
// answers only for the image it inspected; for another (the configuration
// named one) it is stopped and the create inspects that image itself, so a
// sandbox never gets another image's platform or VOLUMEs.
func TestImageProbeOnlyForItsImage(t *testing.T) {
	newProbe := func() (*imageProbe, context.Context) {
		ctx, cancel := context.WithCancel(context.Background())
		p := &imageProbe{image: "busybox:latest", done: make(chan struct{}), cancel: cancel,
			platform: "linux/amd64", img: provider.Image{Volumes: []string{"/data"}}}
		close(p.done)
		return p, ctx
	}
	p, ctx := newProbe()
	if _, _, ok, _ := p.result("debian:stable"); ok {
		t.Error("the probe of busybox:latest answered for debian:stable")
	}
	if ctx.Err() == nil {
		t.Error("the probe of another image was not stopped")
	}
	p, _ = newProbe()
	platform, img, ok, err := p.result("busybox:latest")
	if !ok || err != nil || platform != "linux/amd64" || len(img.Volumes) != 1 {
		t.Errorf("the probe's own image: %q %v %v %v", platform, img, err, ok)
	}
	// No probe (a pool's member may be claimed): the create inspects
	// itself, and ending it stops nothing.
	var none *imageProbe
	if _, _, ok, _ := none.result("busybox:latest"); ok {
		t.Error("no probe answered")
	}
	none.stop()
}
