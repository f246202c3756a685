package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
)

// prepareExtras saves the services archive, and installs it when a service
// starts automatically, and reads the host ports of a new container, while
// /src is being filled; it returns a func that waits for all that. So named
// ports and services add little to create's time.
func (pv *Provisioner) prepareExtras(ctx context.Context, r *api.Repo, ref provider.Ref, cfg *config.Config, out *api.Created, portsAfter func() error) func() error {
	done := make(chan error, 2)
	n := 0
	archive, err := services.Save(r, out.Name, cfg)
	if err != nil {
		return func() error { return fmt.Errorf("save services: %w", err) }
	}
	if slices.ContainsFunc(cfg.Services, func(sc config.Service) bool { return sc.Autostart }) {
		n++
		go func() {
			if err := pv.services.Install(ctx, ref, archive); err != nil {
				done <- fmt.Errorf("install services: %w", err)
				return
			}
			done <- nil
		}()
	}
	if len(cfg.Ports) > 0 {
		n++
		go func() {
			// A confined sandbox's ports are its gateway's to publish.
			if portsAfter != nil {
				if err := portsAfter(); err != nil {
					done <- err
					return
				}
			}
			res, err := pv.services.Ports(ctx, &api.Handle{Repo: r, Ref: ref, Slug: out.Name})
			if err != nil {
				done <- err
				return
			}
			out.Ports = res.Ports
			done <- nil
		}()
	}
	return func() error {
		var errs []error
		for range n {
			errs = append(errs, <-done)
		}
		return errors.Join(errs...)
	}
}
