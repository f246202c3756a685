// Package secretdecl reads the secrets a user declares (docs/secrets.md):
// a [secrets.NAME] table of .litterbox.local.toml or the user's own
// configuration file, never of the committed .litterbox.toml, which an
// agent can change. It is the part of package secrets that the
// configuration package reads files with, and imports nothing of engines;
// package secrets fetches the values and binds them to sandboxes.
package secretdecl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/internal/tomlkeys"
	"github.com/litterbox-dev/litterbox/runner"
)

// Where secrets are declared: the repository's local file (git-ignored,
// the user's) and the user's own configuration file (UserFile), never the
// committed file.
const (
	LocalFile     = ".litterbox.local.toml"
	CommittedFile = ".litterbox.toml"
)

// Source kinds.
const (
	SourceEnv     = "env"
	SourceFile    = "file"
	SourceCommand = "command"
	// SourceDotenv is a value of a dotenv file of the working tree that
	// the user marks in [bootstrap] (docs/secrets.md): the sandbox's copy
	// of the file holds the placeholder.
	SourceDotenv = "dotenv"
)

// Source is where a secret's value comes from, on the host.
type Source struct {
	// Kind is SourceEnv, SourceFile or SourceCommand.
	Kind string `json:"kind"`
	// Ref is the variable (SourceEnv) or the path (SourceFile: absolute,
	// or ~/ for the home directory).
	Ref string `json:"ref,omitempty"`
	// Command is the argv of a SourceCommand, run without a shell; its
	// standard output is the value.
	Command []string `json:"command,omitempty"`
	// Var is the key of a SourceDotenv's file (Ref, absolute) whose value
	// it is.
	Var string `json:"var,omitempty"`
}

// String is the source as written.
func (s Source) String() string {
	switch s.Kind {
	case SourceCommand:
		return "command " + runner.Quote(s.Command...)
	case SourceDotenv:
		return "dotenv " + s.Var + " of " + s.Ref
	}
	return s.Kind + ":" + s.Ref
}

// Declaration is one secret as the user declared it.
type Declaration struct {
	Name   string
	Source Source
	// Hosts are the hosts the value may go to: entries as the egress
	// allowlist takes them (policy.ParseEntry).
	Hosts []string
	// Header ("Authorization: Bearer {}") or Basic ("x-access-token:{}")
	// is how the gateway sends the value on every request to Hosts; with
	// neither, it replaces the placeholder where the sandbox sends it in
	// a header (URL userinfo included: it is sent as Basic credentials).
	Header string
	Basic  string
	// Env is the sandbox's variable holding the placeholder.
	Env string
	// CA is a PEM file (absolute, or ~/ for the home directory) of more
	// CA certificates the gateway trusts when it connects to the hosts
	// secrets are bound to, besides the public roots built into it: a
	// company's own CA. "" for none.
	CA string
	// Where is the file and line it was declared at.
	Where string
}

// Sent says how the value is sent: "header NAME", "basic TEMPLATE" or
// "placeholder".
func (d Declaration) Sent() string {
	switch {
	case d.Basic != "":
		return "basic " + d.Basic
	case d.Header != "":
		name, _, _ := strings.Cut(d.Header, ":")
		return "header " + strings.TrimSpace(name)
	}
	return "placeholder"
}

// UserFile is the user's own configuration file:
// $XDG_CONFIG_HOME/litterbox/config.toml, or ~/.config/litterbox/config.toml.
func UserFile() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "litterbox", "config.toml")
}

// UserFileText is UserFile as messages name it.
const UserFileText = "your own ~/.config/litterbox/config.toml"

// LoadUser reads the secrets of UserFile; none when there is no such file.
func LoadUser() ([]Declaration, error) {
	path := UserFile()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })
	envRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
)

// keys are the keys of a [secrets.NAME] table.
var keys = []string{"source", "command", "hosts", "header", "basic", "user", "env", "ca"}

// Reserved are the variables litterbox sets in a confined sandbox itself
// (egress.Env, egress.TrustEnv: package secrets' tests check that each is
// here), which no secret may take.
var Reserved = []string{
	"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy",
	"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT",
	"PATH", "HOME", "USER", "SHELL", "PWD", "HOSTNAME", "TERM",
}

// reservedEnv reports whether litterbox sets name in a sandbox itself.
func reservedEnv(name string) bool {
	return slices.Contains(Reserved, name) ||
		strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "PORT_") || strings.HasPrefix(name, "LITTERBOX_")
}

// Parse reads the [secrets] tables of a configuration file's content
// (file names it in messages), checks each, and returns them sorted by
// name, every default filled in. The rest of the file is not read: the
// configuration package reads it. Errors name the file and line.
func Parse(file string, data []byte) ([]Declaration, error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: %s", file, row, col, de.Error())
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	raw, ok := doc["secrets"]
	if !ok {
		return nil, nil
	}
	lines := tomlkeys.Lines(data)
	at := func(key string) string {
		for k := key; k != ""; {
			if l, ok := lines[k]; ok {
				return fmt.Sprintf("%s:%d", file, l)
			}
			i := strings.LastIndexByte(k, '.')
			if i < 0 {
				break
			}
			k = k[:i]
		}
		return file
	}
	table, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: secrets is not a table: declare each as [secrets.NAME] (see docs/secrets.md)", at("secrets"))
	}
	var out []Declaration
	for name, v := range table {
		d, err := parseOne(name, v, func(key string) string { return at("secrets." + name + key) })
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i, a := range out {
		for _, b := range out[:i] {
			if a.Env == b.Env {
				return nil, fmt.Errorf("%s: secrets %s and %s both set %s in the sandbox: give one another env", a.Where, b.Name, a.Name, a.Env)
			}
		}
	}
	return out, nil
}

// parseOne checks one [secrets.NAME] table; at says where a key of it
// (".source", or "" for the table) is.
func parseOne(name string, v any, at func(key string) string) (Declaration, error) {
	fail := func(key, format string, args ...any) (Declaration, error) {
		who := name
		if !nameRE().MatchString(name) {
			who = fmt.Sprintf("%q", name)
		}
		return Declaration{}, fmt.Errorf("%s: secret %s: %s (see docs/secrets.md)", at(key), who, fmt.Sprintf(format, args...))
	}
	if !nameRE().MatchString(name) {
		return fail("", "a name is 1 to 64 of a-z, 0-9, - and _, starting with a letter or digit")
	}
	t, ok := v.(map[string]any)
	if !ok {
		return fail("", "not a table: write [secrets.%s] with source, hosts...", name)
	}
	d := Declaration{Name: name, Where: at("")}
	// Each key, of its type: strings, but command and hosts, lists of
	// them.
	strs, lists := map[string]string{}, map[string][]string{}
	var unknown []string
	for k, x := range t {
		switch {
		case !slices.Contains(keys, k):
			unknown = append(unknown, k)
		case k == "command" || k == "hosts":
			arr, ok := x.([]any)
			for _, e := range arr {
				s, isStr := e.(string)
				ok = ok && isStr
				lists[k] = append(lists[k], s)
			}
			if !ok {
				return fail("."+k, "%s is not a list of strings", k)
			}
			if lists[k] == nil {
				lists[k] = []string{}
			}
		default:
			s, ok := x.(string)
			if !ok {
				return fail("."+k, "%s is %T, not a string", k, x)
			}
			strs[k] = s
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fail("."+unknown[0], "unknown key %q (the keys are %s)", unknown[0], strings.Join(keys, ", "))
	}
	source, hasSource := strs["source"]
	command, hasCommand := lists["command"]
	switch {
	case hasSource && hasCommand:
		return fail(".command", "both source and command: a value comes from one of them")
	case hasCommand:
		if len(command) == 0 || command[0] == "" {
			return fail(".command", "command is empty: write the argv of a program whose output is the value, [\"op\", \"read\", \"op://vault/item/field\"]")
		}
		d.Source = Source{Kind: SourceCommand, Command: command}
	case hasSource:
		kind, ref, _ := strings.Cut(source, ":")
		switch {
		case kind == SourceEnv && envRE().MatchString(ref):
			d.Source = Source{Kind: SourceEnv, Ref: ref}
		case kind == SourceFile && ref != "":
			if !filepath.IsAbs(ref) && !strings.HasPrefix(ref, "~/") {
				return fail(".source", "file:%s is not an absolute path (or ~/...)", ref)
			}
			d.Source = Source{Kind: SourceFile, Ref: ref}
		default:
			return fail(".source", "source %q is not env:VAR or file:PATH (or write command = [...])", source)
		}
	default:
		return fail("", "no source: write source = \"env:VAR\", source = \"file:PATH\", or command = [...]")
	}
	hosts := lists["hosts"]
	if len(hosts) == 0 {
		return fail("", "no hosts: a secret goes only to the hosts it is bound to, hosts = [\"api.example.com\"]")
	}
	for _, h := range hosts {
		if _, err := policy.ParseEntry(h); err != nil {
			return fail(".hosts", "hosts: %v", err)
		}
	}
	d.Hosts = hosts
	header, hasHeader := strs["header"]
	basic, hasBasic := strs["basic"]
	user, hasUser := strs["user"]
	switch {
	case hasUser && hasBasic:
		return fail(".basic", "user and basic: user = \"NAME\" is basic = \"NAME:{}\", write one")
	case hasUser && (user == "" || strings.ContainsAny(user, ":{}") || controlChar(user)):
		return fail(".user", "user %q is not a user name", user)
	case hasUser:
		basic, hasBasic = user+":{}", true
	}
	if hasHeader && hasBasic {
		return fail(".basic", "header and basic: the value is sent one way")
	}
	if hasHeader {
		hname, tmpl, ok := strings.Cut(header, ":")
		if !ok || strings.TrimSpace(hname) == "" || strings.ContainsAny(strings.TrimSpace(hname), " \t") {
			return fail(".header", "header %q is not \"Name: value\" (\"Authorization: Bearer {}\")", header)
		}
		if !strings.Contains(tmpl, "{}") || controlChar(header) {
			return fail(".header", "header %q has no {} where the value goes (\"Authorization: Bearer {}\")", header)
		}
		d.Header = header
	}
	if hasBasic {
		if !strings.Contains(basic, ":") || !strings.Contains(basic, "{}") || controlChar(basic) {
			return fail(".basic", "basic %q is not user:password with {} for the value (\"x-access-token:{}\")", basic)
		}
		d.Basic = basic
	}
	env, hasEnv := strs["env"]
	if !hasEnv {
		env = strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	}
	if !envRE().MatchString(env) {
		return fail(".env", "env %q is not a variable name", env)
	}
	if reservedEnv(env) {
		return fail(".env", "litterbox sets %s in the sandbox itself: choose another env", env)
	}
	d.Env = env
	if ca, ok := strs["ca"]; ok {
		if !filepath.IsAbs(ca) && !strings.HasPrefix(ca, "~/") {
			return fail(".ca", "ca %q is not an absolute path (or ~/...) of a PEM file", ca)
		}
		d.CA = ca
	}
	return d, nil
}

func controlChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// CheckCommitted refuses secrets in the committed file's content: it comes
// with the code a sandbox holds, which an agent can change, and a secret
// declared there could send a value anywhere.
func CheckCommitted(file string, data []byte) error {
	line, ok := tomlkeys.Lines(data)["secrets"]
	if !ok {
		return nil
	}
	return fmt.Errorf("%s:%d: secrets can only be declared in %s or %s: the committed file comes with the code a sandbox holds, which an agent can change (see docs/secrets.md)",
		file, line, LocalFile, UserFileText)
}

// Merge lays the declarations of over over those of base (the local file
// over the user's own file): a secret over declares replaces base's of the
// same name whole.
func Merge(base, over []Declaration) []Declaration {
	out := slices.Clone(over)
	for _, d := range base {
		if !slices.ContainsFunc(over, func(o Declaration) bool { return o.Name == d.Name }) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
