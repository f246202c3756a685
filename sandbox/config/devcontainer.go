package config

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/config/devcontainer"
)

// UseDevContainer lays the repository's devcontainer.json at commit
// (devcontainer.Files; fs are what FilesAt read of them there) under c
// when c names no image: its image (or its Dockerfile, which the create
// builds), its postCreateCommand as the setup command unless c has one,
// its forwardPorts as named ports beside c's, its containerEnv. What the
// file asks for that a sandbox cannot honour, or that c's own settings win
// over, is in c.DevContainer.Ignored, never applied. It is read from the
// user's commit, as File is: never from an agent's branch or the working
// tree.
func (c *Config) UseDevContainer(commit string, fs []git.FileContent) error {
	if c.Image != "" {
		return nil
	}
	name, data, err := firstDevContainer(commit, fs)
	if err != nil || name == "" {
		return err
	}
	f, err := devcontainer.Parse(name, data)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c.ApplyDevContainer(f)
}

// FindDevContainer is the name and content of the repository's
// devcontainer.json at commit, the first of devcontainer.Files there; ""
// when there is none.
func FindDevContainer(ctx context.Context, g *git.Repo, commit string) (name string, data []byte, err error) {
	fs, err := g.FilesAt(ctx, commit, devcontainer.Files...)
	if err != nil {
		return "", nil, fmt.Errorf("read %s from %s: %w", devcontainer.Files[0], short(commit), err)
	}
	return firstDevContainer(commit, fs)
}

// firstDevContainer is the first of devcontainer.Files that fs, read of
// them at commit, found.
func firstDevContainer(commit string, fs []git.FileContent) (name string, data []byte, err error) {
	for i, f := range fs {
		if f.Err != nil {
			return "", nil, fmt.Errorf("read %s from %s: %w", devcontainer.Files[i], short(commit), f.Err)
		}
		if f.OK {
			return devcontainer.Files[i], f.Content, nil
		}
	}
	return "", nil, nil
}

// ApplyDevContainer lays f, a devcontainer.json read, under c when c
// names no image (see UseDevContainer); f is c's own from then on.
func (c *Config) ApplyDevContainer(f *devcontainer.File) error {
	if c.Image != "" {
		return nil
	}
	if f.Image != "" && !ValidImage(f.Image) {
		return fmt.Errorf("%w: %s: image %q is not an image reference", ErrInvalid, f.Name, f.Image)
	}
	c.Image = f.Image
	if f.Dockerfile != "" && f.Image != "" {
		f.Ignored = append(f.Ignored, "build (image is set)")
		f.Dockerfile, f.Context = "", ""
	}
	if f.Setup != nil {
		if slices.Equal(c.Setup, DefaultSetup) && !hasNUL(f.Setup) {
			c.Setup = f.Setup
		} else {
			f.Ignored = append(f.Ignored, "postCreateCommand (setup in "+File+" wins)")
		}
	}
	for _, p := range f.Ports {
		// The label names the port when it makes a port name ("Web App"
		// is web-app) that is free; else p<port>.
		name := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(p.Label)), " ", "-")
		if !portNameRE().MatchString(name) || slices.ContainsFunc(c.Ports, func(q Port) bool { return q.Name == name }) {
			name = "p" + strconv.Itoa(p.Port)
		}
		switch {
		case c.Network == NetworkNone:
			f.Ignored = append(f.Ignored, fmt.Sprintf("forwardPorts %d (network = \"none\")", p.Port))
		case slices.ContainsFunc(c.Ports, func(q Port) bool { return q.Name == name || q.ContainerPort == p.Port }):
			// [ports] in the file already names it, or its name.
		default:
			c.Ports = append(c.Ports, Port{Name: name, ContainerPort: p.Port})
		}
	}
	slices.SortFunc(c.Ports, func(a, b Port) int { return strings.Compare(a.Name, b.Name) })
	for _, k := range slices.Sorted(maps.Keys(f.Env)) {
		// litterbox's own variables (docs/images.md) are not the file's, and
		// a NUL cannot be passed to the engine.
		if !envNameRE().MatchString(k) || k == "HOME" || k == "LITTERBOX_SANDBOX" || strings.HasPrefix(k, "PORT_") || strings.ContainsRune(f.Env[k], 0) {
			f.Ignored = append(f.Ignored, "containerEnv."+k)
			delete(f.Env, k)
		}
	}
	if len(f.Env) > 0 {
		c.Env = f.Env
	}
	slices.Sort(f.Ignored)
	f.Ignored = slices.Compact(f.Ignored) // a record applied again
	c.Sources = append(c.Sources, f.Name)
	c.DevContainer = f
	return nil
}

// DevContainerWarning is the one warning a create gives of what c's
// devcontainer.json asks for that the sandbox does not do; "" when nothing.
func (c *Config) DevContainerWarning() string {
	if c.DevContainer == nil || len(c.DevContainer.Ignored) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: ignored, litterbox does not apply %s (see docs/images.md#devcontainerjson)", c.DevContainer.Name, strings.Join(c.DevContainer.Ignored, ", "))
}
