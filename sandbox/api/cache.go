package api

// CacheInfo is one shared cache volume of a repository, as `litterbox cache ls`
// shows it.
type CacheInfo struct {
	Name   string `json:"name"`
	Volume string `json:"volume"`
	// Path is where sandboxes mount it, "" for a cache the configuration
	// no longer names (clear empties it; the engine keeps the volume).
	Path string `json:"path"`
	// ReadOnly: sandboxes mount it read-only ([cache] mode = "ro").
	ReadOnly bool `json:"readOnly"`
}
