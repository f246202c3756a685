package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
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
}

// ReadSettings reads the settings sandbox slug was made with; ok is false
// when it has no record.
func ReadSettings(r *core.Repo, slug string) (*Settings, bool, error) {
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
func WriteSettings(r *core.Repo, slug string, rec *Settings) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return WriteAtomic(File(r.Git.CommonDir, slug, SettingsFile), append(data, '\n'))
}
