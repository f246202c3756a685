package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Endpoint is the engine the docker CLI talks to, found as the CLI finds it:
// --host, else DOCKER_HOST, else DOCKER_CONTEXT, else the current context of
// the CLI's config (`docker context use`), else the default socket. Knowing
// it lets the provider reuse one ssh connection for an ssh engine, make port
// URLs that work from here, and name the engine in its errors.
type Endpoint struct {
	// URL is the engine's address: unix:///path, tcp://host:port,
	// ssh://[user@]host[:port]; "" when a context's could not be read (the
	// CLI still finds it).
	URL string
	// Context is the docker context it comes from, "" for none.
	Context string
}

// DefaultSocket is the docker CLI's default endpoint on Linux.
const DefaultSocket = "unix:///var/run/docker.sock"

// ResolveEndpoint finds the endpoint the docker CLI would use given host (its
// --host, "" for none), reading only the environment and the CLI's files.
func ResolveEndpoint(host string) Endpoint {
	if host != "" {
		return Endpoint{URL: host}
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return Endpoint{URL: h}
	}
	name := os.Getenv("DOCKER_CONTEXT")
	if name == "" {
		name = currentContext()
	}
	if name == "" || name == "default" {
		return Endpoint{URL: DefaultSocket}
	}
	return Endpoint{URL: contextHost(name), Context: name}
}

// configDir is the docker CLI's configuration directory.
func configDir() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker")
}

// currentContext is the context `docker context use` chose, "" for none.
func currentContext() string {
	data, err := os.ReadFile(filepath.Join(configDir(), "config.json"))
	if err != nil {
		return ""
	}
	var cfg struct{ CurrentContext string }
	if json.Unmarshal(data, &cfg) != nil {
		return ""
	}
	return cfg.CurrentContext
}

// contextHost reads the docker endpoint of context name from the CLI's
// context store (contexts/meta/<sha256 of the name>/meta.json); "" when it
// cannot.
func contextHost(name string) string {
	sum := sha256.Sum256([]byte(name))
	data, err := os.ReadFile(filepath.Join(configDir(), "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"))
	if err != nil {
		return ""
	}
	var meta struct {
		Endpoints map[string]struct{ Host string }
	}
	if json.Unmarshal(data, &meta) != nil {
		return ""
	}
	return meta.Endpoints["docker"].Host
}

// Scheme is the endpoint's kind: "unix", "tcp", "ssh", "npipe", or "" when
// unknown.
func (e Endpoint) Scheme() string {
	scheme, _, ok := strings.Cut(e.URL, "://")
	if !ok {
		return ""
	}
	return scheme
}

// HostName is the host of a tcp or ssh endpoint (without user or port).
func (e Endpoint) HostName() string {
	u, err := url.Parse(e.URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// Local reports whether published ports of the engine are this machine's: a
// unix socket, or tcp to a loopback address.
func (e Endpoint) Local() bool {
	switch e.Scheme() {
	case "unix", "npipe":
		return true
	case "tcp", "http", "https":
		h := e.HostName()
		if h == "localhost" {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

// String names the endpoint for messages: its URL, and the context it comes
// from.
func (e Endpoint) String() string {
	switch {
	case e.Context != "" && e.URL != "":
		return e.URL + " (docker context " + e.Context + ")"
	case e.Context != "":
		return "docker context " + e.Context
	}
	return e.URL
}
