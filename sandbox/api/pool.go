package api

import (
	"time"
)

// PoolEntry is one pooled container, as `litterbox pool` and `list` show it.
type PoolEntry struct {
	Container string `json:"container"`
	// State is "ready" (HEAD copied in, waiting to be claimed), "filling"
	// (being made, or a fill cut short), "stale" (made for another
	// configuration or commit; the next fill replaces it), "removing" (a
	// removal cut short), or the container's state when it does not run.
	State   string    `json:"state"`
	Commit  string    `json:"commit,omitempty"`
	Created time.Time `json:"created"`
}
