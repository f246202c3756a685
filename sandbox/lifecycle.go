package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/docker"
)

// found is what lookup knows about one sandbox.
type found struct {
	slug      string
	container *docker.Container // nil when there is none
	branchID  string            // empty when there is no branch
}

// lookup finds a sandbox's container and branch in parallel.
func (s *Service) lookup(ctx context.Context, r *Repo, name string) (*found, error) {
	slug, err := Slugify(name)
	if err != nil {
		return nil, err
	}
	f := &found{slug: slug}
	var cts []docker.Container
	var psErr, refErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		cts, psErr = s.containers(ctx, r, slug)
	}()
	go func() {
		defer wg.Done()
		f.branchID, _, refErr = r.Git.ResolveRef(ctx, BranchRef(slug))
	}()
	wg.Wait()
	if psErr != nil {
		return nil, psErr
	}
	if refErr != nil {
		return nil, refErr
	}
	if len(cts) > 0 {
		f.container = &cts[0]
	}
	if f.container == nil && f.branchID == "" {
		return nil, notFound(slug)
	}
	return f, nil
}

func notFound(slug string) error {
	return &Error{Kind: ErrNotFound,
		Msg:   fmt.Sprintf("Sandbox '%s' not found. See `litterbox list` for the sandboxes of this repository.", slug),
		Agent: fmt.Sprintf("Sandbox '%s' not found in this repository. Check the name (the one you gave sandbox-create), or create it with sandbox-create.", slug)}
}

// Outcome is the result of pausing or resuming one sandbox.
type Outcome struct {
	Name    string `json:"name"`
	Repo    string `json:"repo"`
	Already bool   `json:"already"` // it was already in the asked-for state
	// Skipped says why --all-envs/--all-repos left this sandbox alone: it is
	// stopped (nothing to pause or resume) or its container vanished meanwhile.
	Skipped string `json:"skipped,omitempty"`
}

// Pause freezes a sandbox's processes, keeping all its state. Pausing a
// paused sandbox is not an error: Outcome.Already says so.
func (s *Service) Pause(ctx context.Context, r *Repo, name string) (Outcome, error) {
	return s.toggle(ctx, r, name, true)
}

// Resume thaws a paused sandbox. Resuming an active one is not an error.
func (s *Service) Resume(ctx context.Context, r *Repo, name string) (Outcome, error) {
	return s.toggle(ctx, r, name, false)
}

func (s *Service) toggle(ctx context.Context, r *Repo, name string, pause bool) (Outcome, error) {
	slug, err := Slugify(name)
	if err != nil {
		return Outcome{}, err
	}
	cts, err := s.containers(ctx, r, slug)
	if err != nil {
		return Outcome{}, err
	}
	if len(cts) == 0 {
		if _, ok, _ := r.Git.ResolveRef(ctx, BranchRef(slug)); ok {
			return Outcome{}, noContainerError(slug)
		}
		return Outcome{}, notFound(slug)
	}
	if st := cts[0].State; st != "running" && st != "paused" {
		// docker unpause of a stopped container says "is not paused", which
		// would read as already active.
		return Outcome{}, stoppedError(slug)
	}
	return s.toggleContainer(ctx, cts[0], pause)
}

func (s *Service) toggleContainer(ctx context.Context, c docker.Container, pause bool) (Outcome, error) {
	out := Outcome{Name: c.Labels[LabelSlug], Repo: c.Labels[LabelRepo]}
	var err error
	if pause {
		out.Already, err = s.Docker.Pause(ctx, c.ID)
	} else {
		out.Already, err = s.Docker.Unpause(ctx, c.ID)
	}
	if errors.Is(err, docker.ErrNotRunning) {
		return out, stoppedError(out.Name)
	}
	if err != nil {
		verb := "resume"
		if pause {
			verb = "pause"
		}
		return out, fmt.Errorf("%s sandbox %q: %w", verb, out.Name, err)
	}
	return out, nil
}

func stoppedError(slug string) error {
	return newError(ErrStopped, "Sandbox '%s' is stopped: its container exited, and the copy in /src, which lives in memory, went with it. Its branch %s%s keeps the committed work: recreate the sandbox from it with `litterbox create --from-branch %s`.", slug, BranchPrefix, slug, slug)
}

// PauseAll pauses every sandbox of r, or of every repository when r is nil.
func (s *Service) PauseAll(ctx context.Context, r *Repo) ([]Outcome, error) {
	return s.toggleAll(ctx, r, true)
}

// ResumeAll resumes every sandbox of r, or of every repository when r is nil.
func (s *Service) ResumeAll(ctx context.Context, r *Repo) ([]Outcome, error) {
	return s.toggleAll(ctx, r, false)
}

func (s *Service) toggleAll(ctx context.Context, r *Repo, pause bool) ([]Outcome, error) {
	cts, err := s.containers(ctx, r, "")
	if err != nil {
		return nil, err
	}
	outs := make([]Outcome, len(cts))
	errs := make([]error, len(cts))
	var wg sync.WaitGroup
	for i, c := range cts {
		if c.State != "running" && c.State != "paused" {
			// A stopped sandbox is neither active nor paused: pausing "all
			// active sandboxes" (FR2.2) leaves it alone, and says so.
			outs[i] = Outcome{Name: c.Labels[LabelSlug], Repo: c.Labels[LabelRepo], Skipped: "stopped"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = s.toggleContainer(ctx, c, pause)
			switch {
			case errors.Is(errs[i], ErrStopped):
				outs[i].Skipped, errs[i] = "stopped", nil
			case errors.Is(errs[i], docker.ErrNoSuchContainer):
				outs[i].Skipped, errs[i] = "gone", nil
			case errs[i] != nil:
				outs[i] = Outcome{} // not done: the error says why
			}
		}()
	}
	wg.Wait()
	return outs, errors.Join(errs...)
}

// DeleteReport says what Delete removed.
type DeleteReport struct {
	Name    string   `json:"name"`
	Removed []string `json:"removed"`
}

// Delete removes a sandbox's container, network, branch and host-side state
// (AC3.3). It refuses, changing nothing, when the branch has commits that are
// not in HEAD, unless force is set: that work would be lost. When a step
// fails, the error names what is still present.
func (s *Service) Delete(ctx context.Context, r *Repo, name string, force bool) (*DeleteReport, error) {
	f, err := s.lookup(ctx, r, name)
	if err != nil {
		return nil, err
	}
	slug := f.slug
	if f.branchID != "" && !force {
		n, err := r.Git.CountCommits(ctx, "HEAD", f.branchID)
		if err != nil {
			return nil, fmt.Errorf("count unmerged commits of %s%s: %w", BranchPrefix, slug, err)
		}
		if n > 0 {
			return nil, newError(ErrUnmerged, "Sandbox '%s' has %d commit(s) on %s%s that are not in HEAD; deleting it would lose them. Review them with `litterbox diff %s`, bring them in with `litterbox merge %s` or `litterbox apply %s`, or delete anyway with `litterbox delete --force %s`.", slug, n, BranchPrefix, slug, slug, slug, slug, slug)
		}
	}

	rep := &DeleteReport{Name: slug}
	var left []string
	network := r.ContainerName(slug)
	if f.container != nil {
		if err := ignoreMissing(s.Docker.Remove(ctx, f.container.ID)); err != nil {
			// Keep the branch: the sandbox stays whole rather than half gone.
			return rep, newError(ErrPartialDelete, "delete sandbox '%s': could not remove container %s: %v\nNothing was removed; try again.", slug, f.container.Name, err)
		}
		rep.Removed = append(rep.Removed, "container "+f.container.Name)
	}
	if nets, err := s.Docker.Networks(ctx, s.resourceFilters(r, slug)); err != nil {
		left = append(left, fmt.Sprintf("network %s (%v)", network, err))
	} else if len(nets) > 0 {
		if err := s.removeNetworks(ctx, r, slug); err != nil {
			left = append(left, fmt.Sprintf("network %s (%v)", network, err))
		} else {
			rep.Removed = append(rep.Removed, "network "+network)
		}
	}
	if f.branchID != "" {
		if err := r.Git.DeleteRef(ctx, BranchRef(slug), f.branchID); err != nil {
			left = append(left, fmt.Sprintf("branch %s%s (%v)", BranchPrefix, slug, err))
		} else {
			rep.Removed = append(rep.Removed, "branch "+BranchPrefix+slug)
		}
	}
	if err := os.RemoveAll(r.stateDir(slug)); err != nil {
		left = append(left, fmt.Sprintf("state %s (%v)", r.stateDir(slug), err))
	}
	if len(left) > 0 {
		return rep, newError(ErrPartialDelete, "delete sandbox '%s' was partial; still present:\n  %s\nRun `litterbox delete %s` again, or remove them by hand.", slug, strings.Join(left, "\n  "), slug)
	}
	return rep, nil
}

// resourceFilters are the label filters that select this sandbox's own
// resources, never a same-named one of another repository.
func (s *Service) resourceFilters(r *Repo, slug string) []string {
	return []string{LabelSlug + "=" + slug, LabelGitDir + "=" + r.Git.CommonDir}
}

// removeNetworks removes the networks labelled as this sandbox's.
func (s *Service) removeNetworks(ctx context.Context, r *Repo, slug string) error {
	ids, err := s.Docker.Networks(ctx, s.resourceFilters(r, slug))
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, s.Docker.NetworkRemove(ctx, id))
	}
	return errors.Join(errs...)
}
