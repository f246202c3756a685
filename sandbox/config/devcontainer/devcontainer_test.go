package devcontainer

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The Go template of microsoft/vscode-dev-containers, as `Add Dev
// Container Configuration Files` writes it: comments, a trailing comma, an
// array command.
const goTemplate = `// For format details, see https://aka.ms/devcontainer.json. For config options, see the
// README at: https://github.com/devcontainers/templates/tree/main/src/go
{
	"name": "Go",
	// Or use a Dockerfile or Docker Compose file. More info: https://containers.dev/guide/dockerfile
	"image": "mcr.microsoft.com/devcontainers/go:1-1.22-bookworm",

	// Features to add to the dev container. More info: https://containers.dev/features.
	"features": {
		"ghcr.io/devcontainers/features/node:1": {}, // node too
	},

	// Use 'forwardPorts' to make a list of ports inside the container available locally.
	"forwardPorts": [8080, "localhost:5432", "db:6379"],
	"portsAttributes": {"8080": {"label": "Web App"}},

	// Use 'postCreateCommand' to run commands after the container is created.
	"postCreateCommand": ["go", "version"],

	/* Configure tool-specific properties. */
	"customizations": {"vscode": {"extensions": ["golang.go",],},},

	// Uncomment to connect as root instead. More info: https://aka.ms/dev-containers-non-root.
	"remoteUser": "vscode",
}
`

// A Dockerfile build with the hardening-weakening keys a project may carry.
const dockerfileSample = `{
  "build": { "dockerfile": "Dockerfile", "context": "..", "args": {"V": "1"} },
  "containerEnv": { "APP_ENV": "dev", "TOKEN": "${localEnv:TOKEN}" },
  "postCreateCommand": "pip install -e . && echo done > /tmp/ok",
  "runArgs": ["--privileged", "--network=host"],
  "privileged": true,
  "capAdd": ["SYS_PTRACE"],
  "securityOpt": ["seccomp=unconfined"],
  "mounts": ["source=${localEnv:HOME}/.ssh,target=/home/vscode/.ssh,type=bind"],
  "init": true,
  "remoteUser": "root"
}`

func TestParseTemplate(t *testing.T) {
	f, err := Parse(".devcontainer/devcontainer.json", []byte(goTemplate))
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		Name:       ".devcontainer/devcontainer.json",
		Image:      "mcr.microsoft.com/devcontainers/go:1-1.22-bookworm",
		RemoteUser: "vscode",
		Setup:      []string{"go", "version"},
		Ports:      []Port{{5432, ""}, {8080, "Web App"}},
		Ignored:    []string{"features", `forwardPorts "db:6379"`},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got  %+v\nwant %+v", f, want)
	}
}

func TestParseDockerfileRefusesHardeningKeys(t *testing.T) {
	f, err := Parse(".devcontainer/devcontainer.json", []byte(dockerfileSample))
	if err != nil {
		t.Fatal(err)
	}
	if f.Dockerfile != ".devcontainer/Dockerfile" || f.Context != "." {
		t.Errorf("build = %q in %q, want .devcontainer/Dockerfile in .", f.Dockerfile, f.Context)
	}
	if !reflect.DeepEqual(f.Env, map[string]string{"APP_ENV": "dev"}) {
		t.Errorf("env = %v", f.Env)
	}
	if !reflect.DeepEqual(f.Setup, []string{"sh", "-c", "pip install -e . && echo done > /tmp/ok"}) {
		t.Errorf("setup = %q", f.Setup)
	}
	want := []string{"build.args", "capAdd", "containerEnv.TOKEN", "init", "mounts", "privileged", "remoteUser root", "runArgs", "securityOpt"}
	if !reflect.DeepEqual(f.Ignored, want) || f.RemoteUser != "" {
		t.Errorf("ignored = %q (user %q), want %q", f.Ignored, f.RemoteUser, want)
	}
}

func TestParseObjectCommandAndRoot(t *testing.T) {
	f, err := Parse(".devcontainer.json", []byte(`{"postCreateCommand": {"a": "x", "b": ["y"]}, "build": {"dockerfile": "Dockerfile"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Setup != nil || f.Dockerfile != "Dockerfile" || f.Context != "." || !reflect.DeepEqual(f.Ignored, []string{"postCreateCommand (object form)"}) {
		t.Errorf("got %+v", f)
	}
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"{\n  \"image\": \"a\"\n  \"x\": 1\n}", ".devcontainer/devcontainer.json:3:"},
		{"{\n\n \"forwardPorts\": [70000]}", ".devcontainer/devcontainer.json:3: forwardPorts"},
		{"{\"build\": {\"dockerfile\": \"../../Dockerfile\"}}", "outside the repository"},
		{"{\"build\": {\"dockerfile\": \"x/Dockerfile\", \"context\": \"y\"}}", "outside the build context"},
		{"[1]", ".devcontainer/devcontainer.json:1:"},
		{"{\"postCreateCommand\": 3}", "not a string or an array"},
	} {
		_, err := Parse(".devcontainer/devcontainer.json", []byte(c.data))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid with %q", c.data, err, c.want)
		}
	}
}

func TestStandardizeKeepsStringsAndLines(t *testing.T) {
	in := "{\"a\": \"// not a comment, /* nor */\", // yes\n \"b\": [1, 2, /* c */ ],\n \"c\": \"\\\",\" , }"
	out := Standardize([]byte(in))
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if v["a"] != "// not a comment, /* nor */" || v["c"] != `",` || len(out) != len(in) || strings.Count(string(out), "\n") != 2 {
		t.Errorf("got %s", out)
	}
}
