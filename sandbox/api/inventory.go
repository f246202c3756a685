package api

import (
	"os"
	"time"
)

// Status is what list shows for a sandbox.
type Status string

// Statuses. The orphan states are shown, never repaired automatically;
// delete removes them.
const (
	StatusActive      Status = "active"
	StatusPaused      Status = "paused"
	StatusStopped     Status = "stopped"
	StatusFailedSetup Status = "failed-setup"
	// StatusGatewayDown: a confined sandbox whose egress gateway is not
	// running, or gone: it has no way out (Sandbox.Note says what to do).
	StatusGatewayDown Status = "gateway-down"
	// StatusCreating: a create of this sandbox is running right now.
	StatusCreating Status = "creating"
	// StatusIncomplete: a create was cut short (killed, the engine failed)
	// before the copy of the repository was verified complete. Whatever is
	// left (container, branch, network) is unusable and holds no work.
	StatusIncomplete  Status = "incomplete"
	StatusNoContainer Status = "orphan-branch"    // branch without container
	StatusNoBranch    Status = "orphan-container" // container without branch
	StatusNoSandbox   Status = "orphan-network"   // network without container or branch
	// StatusLeftover: a delete removed the container and the branch, and
	// was cut short before the rest (the gateway, its volume, networks,
	// the state); delete finishes it.
	StatusLeftover Status = "leftover"
)

// Sandbox is one sandbox as list and create report it.
type Sandbox struct {
	Name      string    `json:"name"`
	Status    Status    `json:"status"`
	Branch    string    `json:"branch"`
	Container string    `json:"container,omitempty"`
	Network   string    `json:"network,omitempty"`
	Repo      string    `json:"repo"`
	Base      string    `json:"base,omitempty"`
	Created   time.Time `json:"created,omitzero"`
	// Egress is the policy of the sandbox's gateway; nil when it has
	// none (network none, egress open).
	Egress *Egress `json:"egress,omitempty"`
	// GitDir is the common git dir of its repository, where its state is;
	// "" when that is not known (the repository is gone).
	GitDir string `json:"-"`
	// Secrets are the secrets the sandbox's gateway adds for it
	// (docs/secrets.md): names and hosts, never a value or a placeholder.
	Secrets []Secret `json:"secrets,omitempty"`
	// Runtime is the engine's runtime the sandbox runs under ("runsc" for
	// gVisor on Docker); "" for the engine's default.
	Runtime string `json:"runtime,omitempty"`
	// Note says what the user can do about its status (a stopped
	// sandbox, a gateway down); "" when nothing.
	Note string `json:"note,omitempty"`
}

// Secret is a secret a sandbox is bound to, as list shows it.
type Secret struct {
	Name  string   `json:"name"`
	Env   string   `json:"env"`
	Hosts []string `json:"hosts"`
}

// Egress is a sandbox's way out as list shows it (docs/egress.md).
type Egress struct {
	Mode       string   `json:"mode"`
	Allow      []string `json:"allow"`
	Deny       []string `json:"deny"`
	Registries bool     `json:"registries"`
	Gateway    string   `json:"gateway"`
	// Refused counts the refusals the gateway recorded since the last
	// collection (list --json collects first); -1 when unknown.
	Refused int `json:"refused"`
}

// DeleteReport says what Delete removed.
type DeleteReport struct {
	Name    string   `json:"name"`
	Removed []string `json:"removed"`
	// Removing is what another process removes after the delete returned
	// (see Detach): the gateway's container and volume, from its record.
	Removing []string `json:"removing,omitempty"`
}

// Detach hands the end of a delete (what its user no longer sees: the
// sandbox's gateway, their volume, networks, its state) to another
// process, which it starts with lock (sandbox slug's create lock) among
// its files and which finishes with Sandboxes.FinishDelete, holding the
// lock until it is done. An error, or a nil Detach, finishes in this
// process.
type Detach func(slug string, lock *os.File) error

// Pruned is a container or network Prune removed.
type Pruned struct {
	Kind    string `json:"kind"` // "container", "network" or "volume"
	Name    string `json:"name"`
	Sandbox string `json:"sandbox"` // "" for a shared cache's volume
	Repo    string `json:"repo"`
}
