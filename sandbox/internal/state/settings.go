package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config/devcontainer"
)

// A sandbox's branch is the agent's writing: its .litterbox.toml is data,
// never settings. So create records in the sandbox's state directory (on
// the host, out of the agent's reach) what it made the sandbox with, and a
// sandbox made from another one's work (a fork, create --from
// litterbox/NAME, a recreate from its own branch) is made with that record.

// SettingsFile is the file of a sandbox's state directory that records the
// settings it was made with.
const SettingsFile = "settings.json"

// Settings is the record of what a sandbox was made with.
type Settings struct {
	// From says where File came from: a commit id of the user's, or
	// "sandbox NAME" when it was taken from another sandbox's record.
	From string `json:"from"`
	// File is .litterbox.toml as it was read; null when there was none.
	File []byte `json:"file"`
	// Image is the image named at create (create --image, or an agent's
	// pick from agent_images), which wins over File's; "" when none was.
	Image string `json:"image,omitempty"`
	// ImageByAgent says an agent named Image: it is used only while the
	// user's agent_images lists it.
	ImageByAgent bool `json:"imageByAgent,omitempty"`
	// Runtime is the runtime named at create (create --runtime), which
	// wins over File's and the local file's; "" when none was. A sandbox
	// made from this one's work (a fork) runs under it too.
	Runtime string `json:"runtime,omitempty"`
	// DevContainer is the devcontainer.json the sandbox was made with, as
	// it was read, with the image built from its Dockerfile in place of
	// its build; nil when none was used. A fork is made with it too.
	DevContainer *devcontainer.File `json:"devcontainer,omitempty"`
}

// ReadSettings reads the settings sandbox slug was made with; ok is false
// when it has no record.
func ReadSettings(r *api.Repo, slug string) (*Settings, bool, error) {
	data, err := os.ReadFile(File(r.Git.CommonDir, slug, SettingsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var rec Settings
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, false, fmt.Errorf("read the settings sandbox '%s' was made with, %s: %w", slug, File(r.Git.CommonDir, slug, SettingsFile), err)
	}
	return &rec, true, nil
}

// WriteSettings records the settings sandbox slug is made with.
func WriteSettings(r *api.Repo, slug string, rec *Settings) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return WriteAtomic(File(r.Git.CommonDir, slug, SettingsFile), append(data, '\n'))
}

// BootstrapFile is the file of a sandbox's state directory that lists the
// files create copied in from the working tree beside the commit (the
// bootstrap, guest/bootstrap.go), NUL-terminated: no snapshot records
// them, whatever the sandbox's .gitignore says.
const BootstrapFile = "bootstrap"

// WriteBootstrap records the paths of the files copied into sandbox slug
// from the working tree; none removes the record.
func WriteBootstrap(r *api.Repo, slug string, paths []string) error {
	p := File(r.Git.CommonDir, slug, BootstrapFile)
	if len(paths) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return WriteAtomic(p, []byte(strings.Join(paths, "\x00")+"\x00"))
}

// Bootstrapped is the set of paths copied into sandbox slug from the
// working tree at create; empty when none were. A record that cannot be
// read is an error: a snapshot that went on would record the files.
func Bootstrapped(r *api.Repo, slug string) (map[string]bool, error) {
	data, err := os.ReadFile(File(r.Git.CommonDir, slug, BootstrapFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the files sandbox '%s' was given from your working tree: %w", slug, err)
	}
	set := map[string]bool{}
	for _, p := range strings.Split(string(data), "\x00") {
		if p != "" {
			set[p] = true
		}
	}
	return set, nil
}
