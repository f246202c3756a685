package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/config/devcontainer"
)

// devContainerCheck says what a create takes from the repository's
// devcontainer.json at HEAD, and what it ignores; ok is false when HEAD has
// none.
func devContainerCheck(ctx context.Context, g *git.Repo) (c api.Check, ok bool) {
	c = api.Check{Name: "devcontainer", Status: api.CheckOK}
	head, err := g.Head(ctx)
	if err != nil {
		return c, false
	}
	name, _, err := config.FindDevContainer(ctx, g, head)
	if err != nil || name == "" {
		return c, false
	}
	cfg, err := config.Load(ctx, g, head, func(string) {})
	switch {
	case errors.Is(err, devcontainer.ErrInvalid):
		c.Status, c.Detail, c.Fix = api.CheckFail, err.Error(), "correct "+name+" at that line, or remove it: create refuses it"
		return c, true
	case err != nil:
		return c, false // the configuration's own error: create says it
	case cfg.DevContainer == nil:
		c.Detail = name + " is not used: image in " + config.File + " wins over it"
		return c, true
	}
	f := cfg.DevContainer
	var read []string
	switch {
	case f.Image != "":
		read = append(read, "image "+f.Image)
	case f.Dockerfile != "":
		read = append(read, "build "+f.Dockerfile+" (built at create)")
	}
	if f.RemoteUser != "" {
		read = append(read, "remoteUser "+f.RemoteUser+" (runs as uid 1000)")
	}
	if slices.Equal(cfg.Setup, f.Setup) && f.Setup != nil {
		read = append(read, "postCreateCommand as setup")
	}
	for _, p := range cfg.Ports {
		if slices.ContainsFunc(f.Ports, func(q devcontainer.Port) bool { return q.Port == p.ContainerPort }) {
			read = append(read, fmt.Sprintf("port %s %d", p.Name, p.ContainerPort))
		}
	}
	if len(f.Env) > 0 {
		read = append(read, "containerEnv "+strings.Join(slices.Sorted(maps.Keys(f.Env)), " "))
	}
	c.Detail = name + ": " + cmpJoin(read, "nothing litterbox uses")
	if len(f.Ignored) > 0 {
		c.Status = api.CheckWarn
		c.Detail += "; ignored: " + strings.Join(f.Ignored, ", ")
		c.Fix = "litterbox never applies those (docs/images.md#devcontainerjson)"
	}
	return c, true
}

func cmpJoin(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, ", ")
}
