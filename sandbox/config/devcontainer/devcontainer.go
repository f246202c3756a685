// Package devcontainer reads a repository's devcontainer.json (the
// Development Container specification's file: JSON with comments and
// trailing commas) into what a sandbox can use of it: an image or a
// Dockerfile to build, the container's environment, the remote user, the
// post-create command and the forwarded ports. Every other key, and every
// value litterbox cannot honour, is listed in Ignored, never applied: the
// sandbox's hardening is not the file's to weaken. It knows the file format
// only; package config decides when the file is used.
package devcontainer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Files are where the file may be, at the repository root, in the order
// they are looked for.
var Files = []string{".devcontainer/devcontainer.json", ".devcontainer.json"}

// ErrInvalid is a file that cannot be read as a devcontainer.json.
var ErrInvalid = errors.New("invalid devcontainer.json")

// File is what a sandbox can use of a devcontainer.json.
type File struct {
	// Name is the file's path in the repository.
	Name string
	// Image is the image's reference; "" when the file names none.
	Image string
	// Dockerfile and Context are build.dockerfile and build.context as
	// paths in the repository (cleaned, never above its root); "" when the
	// file has no build.
	Dockerfile, Context string
	// Env is containerEnv.
	Env map[string]string
	// RemoteUser is remoteUser; the sandbox runs as uid 1000 whatever it
	// names (root is Ignored).
	RemoteUser string
	// Setup is postCreateCommand as argv: a string runs under sh -c.
	Setup []string
	// Ports are forwardPorts on the container, sorted by port.
	Ports []Port
	// Ignored names what the file asks for that the sandbox does not do,
	// sorted: keys ("privileged", "mounts") and values ("remoteUser root").
	Ignored []string
}

// Port is a forwarded port and its portsAttributes label ("" when none),
// which package config makes its name from.
type Port struct {
	Port  int
	Label string
}

// used are the keys a sandbox takes; quiet those it needs not (metadata,
// editor settings). Any other key is Ignored.
var (
	used  = []string{"image", "build", "containerEnv", "remoteUser", "postCreateCommand", "forwardPorts", "portsAttributes"}
	quiet = []string{"name", "$schema", "customizations"}
)

// Parse reads data, the content of the file name. A file that is not JSON
// (with comments and trailing commas) is ErrInvalid, with the line.
func Parse(name string, data []byte) (*File, error) {
	clean := Standardize(data)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(clean, &raw); err != nil {
		return nil, syntaxError(name, clean, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: %s: not a JSON object", ErrInvalid, name)
	}
	f := &File{Name: name}
	bad := func(key string, err error) error {
		return fmt.Errorf("%w: %s:%d: %s: %v", ErrInvalid, name, keyLine(clean, key), key, err)
	}
	for key := range raw {
		if !slices.Contains(used, key) && !slices.Contains(quiet, key) {
			f.Ignored = append(f.Ignored, key)
		}
	}
	if v, ok := raw["image"]; ok {
		if err := json.Unmarshal(v, &f.Image); err != nil {
			return nil, bad("image", err)
		}
	}
	if v, ok := raw["build"]; ok {
		if err := f.build(name, v); err != nil {
			return nil, bad("build", err)
		}
	}
	if v, ok := raw["containerEnv"]; ok {
		if err := json.Unmarshal(v, &f.Env); err != nil {
			return nil, bad("containerEnv", err)
		}
		for k, val := range f.Env {
			// ${localEnv:X} would carry the host's environment in.
			if strings.Contains(val, "${") {
				f.Ignored = append(f.Ignored, "containerEnv."+k)
				delete(f.Env, k)
			}
		}
	}
	if v, ok := raw["remoteUser"]; ok {
		if err := json.Unmarshal(v, &f.RemoteUser); err != nil {
			return nil, bad("remoteUser", err)
		}
		if f.RemoteUser == "root" || f.RemoteUser == "0" {
			f.Ignored = append(f.Ignored, "remoteUser "+f.RemoteUser)
			f.RemoteUser = ""
		}
	}
	if v, ok := raw["postCreateCommand"]; ok {
		var s string
		var argv []string
		switch {
		case json.Unmarshal(v, &s) == nil:
			if s != "" {
				f.Setup = []string{"sh", "-c", s}
			}
		case json.Unmarshal(v, &argv) == nil:
			f.Setup = argv
		case bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")):
			// The object form runs commands in parallel; one setup
			// command cannot say that.
			f.Ignored = append(f.Ignored, "postCreateCommand (object form)")
		default:
			return nil, bad("postCreateCommand", errors.New("not a string or an array of strings"))
		}
	}
	if v, ok := raw["forwardPorts"]; ok {
		if err := f.ports(v, raw["portsAttributes"]); err != nil {
			return nil, bad("forwardPorts", err)
		}
	}
	slices.Sort(f.Ignored)
	return f, nil
}

// build reads build.dockerfile and build.context, relative to the file's
// directory, as paths in the repository.
func (f *File) build(name string, v json.RawMessage) error {
	var b struct {
		Dockerfile string `json:"dockerfile"`
		Context    string `json:"context"`
		Args       any    `json:"args"`
		Target     any    `json:"target"`
	}
	if err := json.Unmarshal(v, &b); err != nil {
		return err
	}
	if b.Dockerfile == "" {
		return errors.New("dockerfile is missing")
	}
	if b.Args != nil {
		f.Ignored = append(f.Ignored, "build.args")
	}
	if b.Target != nil {
		f.Ignored = append(f.Ignored, "build.target")
	}
	dir := path.Dir(name)
	for _, p := range []*string{&b.Dockerfile, &b.Context} {
		*p = path.Join(dir, cmpOr(*p, "."))
		if path.IsAbs(*p) || *p == ".." || strings.HasPrefix(*p, "../") {
			return fmt.Errorf("%s is outside the repository", *p)
		}
	}
	if b.Context != "." && !strings.HasPrefix(b.Dockerfile, b.Context+"/") {
		return fmt.Errorf("the Dockerfile %s is outside the build context %s", b.Dockerfile, b.Context)
	}
	f.Dockerfile, f.Context = b.Dockerfile, b.Context
	return nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ports reads forwardPorts: numbers, or "localhost:N"; "service:N" names
// another container (Docker Compose), which a sandbox has not.
func (f *File) ports(v, attrs json.RawMessage) error {
	var list []any
	if err := json.Unmarshal(v, &list); err != nil {
		return err
	}
	var labels map[string]struct {
		Label string `json:"label"`
	}
	_ = json.Unmarshal(attrs, &labels) // labels only name ports
	for _, p := range list {
		n := 0
		switch p := p.(type) {
		case float64:
			n = int(p)
			if float64(n) != p {
				n = 0
			}
		case string:
			host, port, ok := strings.Cut(p, ":")
			if !ok || host != "localhost" && host != "127.0.0.1" {
				f.Ignored = append(f.Ignored, "forwardPorts "+strconv.Quote(p))
				continue
			}
			n, _ = strconv.Atoi(port)
		}
		if n < 1 || n > 65535 {
			return fmt.Errorf("%v is not a port (1-65535, or \"localhost:PORT\")", p)
		}
		if !slices.ContainsFunc(f.Ports, func(q Port) bool { return q.Port == n }) {
			f.Ports = append(f.Ports, Port{Port: n, Label: labels[strconv.Itoa(n)].Label})
		}
	}
	slices.SortFunc(f.Ports, func(a, b Port) int { return a.Port - b.Port })
	return nil
}

// Standardize turns JSON with comments and trailing commas into JSON:
// comments and trailing commas become spaces, newlines stay, so an offset
// in the result is the same line and column in data.
func Standardize(data []byte) []byte {
	out := bytes.Clone(data)
	blank := func(i, j int) {
		for k := i; k < j && k < len(out); k++ {
			if out[k] != '\n' && out[k] != '\r' {
				out[k] = ' '
			}
		}
	}
	comma := -1 // the last comma outside a string, while only space follows it
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			comma = -1
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			j := bytes.IndexByte(out[i:], '\n')
			if j < 0 {
				j = len(out) - i
			}
			blank(i, i+j)
			i += j - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			j := bytes.Index(out[i+2:], []byte("*/"))
			end := len(out)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			blank(i, end)
			i = end - 1
		case c == ',':
			comma = i
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			comma = -1
		}
	}
	return out
}

// syntaxError names the line of a JSON error in data.
func syntaxError(name string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(len(data))
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	line := 1 + bytes.Count(data[:min(off, int64(len(data)))], []byte("\n"))
	return fmt.Errorf("%w: %s:%d: %v; fix the file (JSON, with comments and trailing commas allowed) or remove it", ErrInvalid, name, line, err)
}

// keyLine is the line of the first "key": in data, 1 when it is not found.
func keyLine(data []byte, key string) int {
	i := bytes.Index(data, []byte(strconv.Quote(key)))
	if i < 0 {
		return 1
	}
	return 1 + bytes.Count(data[:i], []byte("\n"))
}
