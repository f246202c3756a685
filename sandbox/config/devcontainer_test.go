package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/sandbox/config/devcontainer"
)

// The committed file's own setup and ports win over the devcontainer.json's
// (a label taken names the port p<port>);
// litterbox's variables are not the file's to set; network = "none" takes
// no port. Each is named as ignored.
func TestUseDevContainerLaysUnderTheFile(t *testing.T) {
	f, err := devcontainer.Parse(".devcontainer.json", []byte(`{
		"image": "team/dev:1",
		"postCreateCommand": "make deps",
		"forwardPorts": [3000, 8080],
		"portsAttributes": {"3000": {"label": "web"}},
		"containerEnv": {"HOME": "/root", "PORT_X": "1", "1BAD": "x", "NUL": "a\u0000b", "NODE_ENV": "development"},
	}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte("setup = [\"true\"]\n[ports]\nweb = 5000\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.ApplyDevContainer(f); err != nil {
		t.Fatal(err)
	}
	if cfg.Image != "team/dev:1" || !slices.Equal(cfg.Setup, []string{"true"}) {
		t.Errorf("image %q setup %q", cfg.Image, cfg.Setup)
	}
	if want := []Port{{"p3000", 3000}, {"p8080", 8080}, {"web", 5000}}; !reflect.DeepEqual(cfg.Ports, want) {
		t.Errorf("ports = %v, want %v", cfg.Ports, want)
	}
	if !reflect.DeepEqual(cfg.Env, map[string]string{"NODE_ENV": "development"}) {
		t.Errorf("env = %v", cfg.Env)
	}
	w := cfg.DevContainerWarning()
	for _, s := range []string{"containerEnv.1BAD", "containerEnv.HOME", "containerEnv.NUL", "containerEnv.PORT_X", "postCreateCommand (setup in .litterbox.toml wins)"} {
		if !strings.Contains(w, s) {
			t.Errorf("warning %q lacks %q", w, s)
		}
	}

	none, _ := Parse([]byte(`network = "none"`), nil)
	if err := none.ApplyDevContainer(f); err != nil || len(none.Ports) != 0 || !strings.Contains(none.DevContainerWarning(), `forwardPorts 3000 (network = "none")`) {
		t.Errorf("network none: ports %v, warning %q, err %v", none.Ports, none.DevContainerWarning(), err)
	}
}

func TestUseDevContainerRefusesABadImage(t *testing.T) {
	cfg := Default()
	err := cfg.ApplyDevContainer(&devcontainer.File{Name: ".devcontainer.json", Image: "--privileged"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), ".devcontainer.json") {
		t.Errorf("err = %v", err)
	}
}
