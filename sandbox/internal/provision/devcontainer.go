package provision

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config/devcontainer"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// DevContainerRepo is the repository of the images made from a
// devcontainer.json's Dockerfile; the tag names what was built.
const DevContainerRepo = "litterbox-devcontainer"

// devContainerImage is the image of f's Dockerfile (build.dockerfile in
// build.context), built from commit's tree (the user's commit the
// configuration was read from, never the working tree) unless the engine
// holds it already. Its tag is a hash of the context's tree and the
// Dockerfile's path: a change to either builds anew, and every later create
// of the same commit builds nothing.
func (pv *Provisioner) devContainerImage(ctx context.Context, r *api.Repo, commit string, f *devcontainer.File) (string, error) {
	c, ok := pv.Provider.(provider.ImageBuilder)
	if !ok {
		return "", core.NewError(api.ErrImage, "%s builds its image from %s, and this engine cannot build images: build it, name it with image in .litterbox.toml, and create again. Nothing was created.", f.Name, f.Dockerfile)
	}
	tree, err := r.Git.TreeAt(ctx, commit, f.Context)
	if err != nil {
		return "", err
	}
	dockerfile := strings.TrimPrefix(f.Dockerfile, f.Context+"/")
	sum := sha256.Sum256([]byte(tree + "\x00" + dockerfile))
	tag := DevContainerRepo + ":" + hex.EncodeToString(sum[:8])
	if _, err := pv.Provider.Image(ctx, tag); !errors.Is(err, provider.ErrNoImage) {
		return tag, err
	}
	treeish := commit
	if f.Context != "." {
		treeish += ":" + f.Context
	}
	var tb bytes.Buffer
	if err := r.Git.TreeArchive(ctx, treeish, &tb); err != nil {
		return "", err
	}
	pv.Log.Info("building the image of "+f.Name, "dockerfile", f.Dockerfile, "image", tag)
	if err := c.BuildImage(ctx, tag, dockerfile, &tb); err != nil {
		return "", core.NewError(api.ErrImage, "Building %s (build.dockerfile of %s) failed: %s\nFix the Dockerfile, or name an image with image in .litterbox.toml; nothing was created.", f.Dockerfile, f.Name, core.CapText(runner.Stderr(err)))
	}
	return tag, nil
}
