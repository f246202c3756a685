package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// The endpoint is found as the docker CLI finds it: --host, DOCKER_HOST,
// DOCKER_CONTEXT, the config's current context, the default socket.
func TestResolveEndpoint(t *testing.T) {
	cfg := t.TempDir()
	writeContext := func(name, host string) {
		sum := sha256.Sum256([]byte(name))
		dir := filepath.Join(cfg, "contexts", "meta", hex.EncodeToString(sum[:]))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		meta := `{"Name":"` + name + `","Metadata":{},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeContext("far", "ssh://me@far.example:2222")
	writeContext("near", "tcp://127.0.0.1:2375")
	t.Setenv("DOCKER_CONFIG", cfg)

	for _, tt := range []struct {
		name, host, env, ctx, current string
		want                          Endpoint
	}{
		{name: "default", want: Endpoint{URL: DefaultSocket}},
		{name: "flag wins", host: "unix:///flag.sock", env: "tcp://h:1", ctx: "far", want: Endpoint{URL: "unix:///flag.sock"}},
		{name: "DOCKER_HOST over contexts", env: "tcp://h:1", ctx: "far", want: Endpoint{URL: "tcp://h:1"}},
		{name: "DOCKER_CONTEXT", ctx: "far", current: "near", want: Endpoint{URL: "ssh://me@far.example:2222", Context: "far"}},
		{name: "current context", current: "near", want: Endpoint{URL: "tcp://127.0.0.1:2375", Context: "near"}},
		{name: "default context", current: "default", want: Endpoint{URL: DefaultSocket}},
		{name: "unreadable context", ctx: "gone", want: Endpoint{Context: "gone"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DOCKER_HOST", tt.env)
			t.Setenv("DOCKER_CONTEXT", tt.ctx)
			if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"currentContext":"`+tt.current+`"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := ResolveEndpoint(tt.host); got != tt.want {
				t.Errorf("ResolveEndpoint(%q) = %+v, want %+v", tt.host, got, tt.want)
			}
		})
	}
}

func TestEndpointKinds(t *testing.T) {
	for _, tt := range []struct {
		url, scheme, host string
		local             bool
	}{
		{"unix:///var/run/docker.sock", "unix", "", true},
		{"tcp://127.0.0.1:2375", "tcp", "127.0.0.1", true},
		{"tcp://localhost:2375", "tcp", "localhost", true},
		{"tcp://10.0.0.9:2376", "tcp", "10.0.0.9", false},
		{"ssh://me@far.example:2222", "ssh", "far.example", false},
		{"ssh://far", "ssh", "far", false},
		{"", "", "", false},
	} {
		e := Endpoint{URL: tt.url}
		if e.Scheme() != tt.scheme || e.HostName() != tt.host || e.Local() != tt.local {
			t.Errorf("%q: scheme %q host %q local %v, want %q %q %v", tt.url, e.Scheme(), e.HostName(), e.Local(), tt.scheme, tt.host, tt.local)
		}
	}
}
