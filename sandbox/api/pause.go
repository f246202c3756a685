package api

// Outcome is the result of pausing or resuming one sandbox.
type Outcome struct {
	Name    string `json:"name"`
	Repo    string `json:"repo"`
	Already bool   `json:"already"` // it was already in the asked-for state
	// Skipped says why --all/--all-repos left this sandbox alone: it is
	// stopped (nothing to pause or resume) or its container vanished meanwhile.
	Skipped string `json:"skipped,omitempty"`
	// Lost are the files a forced pause that ended the sandbox (Kubernetes)
	// lost: its branch does not hold them.
	Lost []Skipped `json:"lost,omitempty"`
	// Ended says the pause ended the sandbox (Kubernetes: its pod was
	// deleted), so what its branch does not hold (its processes, /tmp) is
	// gone; of a resume, that it made the sandbox's pod again, to reach
	// its gateway made again (Gateway).
	Ended bool `json:"ended,omitempty"`
	// Gateway is the egress gateway a resume made again: it was gone
	// (removed, its pod deleted or evicted).
	Gateway string `json:"gateway,omitempty"`
	// GitDir is the common git dir the sandbox's labels name: where its
	// activity record is, when the repository was not given.
	GitDir string `json:"-"`
}
