// Package secrets is the host's side of the credentials a sandbox uses
// without holding them: the user's declarations (a [secrets.NAME] table of
// .litterbox.local.toml or the user's own configuration file, never the
// committed .litterbox.toml, which an agent can change), where each value
// comes from (an environment variable, a file, or a command such as a
// password manager's, run on the host when the sandbox needs it), the
// random placeholders a sandbox holds instead, and what `litterbox secrets`
// shows. The values go to the sandbox's gateway (package gateway, through
// egress.SetSecrets), which adds them on the way out to the hosts each is
// bound to. docs/secrets.md is the design.
//
// A value is held in memory only, as a Value, which prints and marshals as
// a mark, never as itself: nothing here writes one to a file, a log, a
// message or an output.
package secrets

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway"
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
}

// String is the source as written.
func (s Source) String() string {
	if s.Kind == SourceCommand {
		return "command " + runner.Quote(s.Command...)
	}
	return s.Kind + ":" + s.Ref
}

// Declaration is one secret as the user declared it.
type Declaration struct {
	Name   string
	Source Source
	// Hosts are the hosts the value may go to: entries as the egress
	// allowlist takes them (gateway.ParseEntry).
	Hosts []string
	// Header ("Authorization: Bearer {}") or Basic ("x-access-token:{}")
	// is how the gateway sends the value on every request to Hosts; with
	// neither, it replaces the placeholder where the sandbox sends it in
	// a header (URL userinfo included: it is sent as Basic credentials).
	Header string
	Basic  string
	// Env is the sandbox's variable holding the placeholder.
	Env string
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

// userFileText is UserFile as messages name it.
const userFileText = "your own ~/.config/litterbox/config.toml"

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
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	envRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// keys are the keys of a [secrets.NAME] table.
var keys = []string{"source", "command", "hosts", "header", "basic", "user", "env"}

// reservedEnv reports whether litterbox sets name in a sandbox itself.
func reservedEnv(name string) bool {
	for _, kv := range slices.Concat(egress.Env(), egress.TrustEnv()) {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return true
		}
	}
	return slices.Contains([]string{"PATH", "HOME", "USER", "SHELL", "PWD", "HOSTNAME", "TERM"}, name) ||
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
	lines := keyLines(data)
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
		if !nameRE.MatchString(name) {
			who = fmt.Sprintf("%q", name)
		}
		return Declaration{}, fmt.Errorf("%s: secret %s: %s (see docs/secrets.md)", at(key), who, fmt.Sprintf(format, args...))
	}
	if !nameRE.MatchString(name) {
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
		case kind == SourceEnv && envRE.MatchString(ref):
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
		if _, err := gateway.ParseEntry(h); err != nil {
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
	if !envRE.MatchString(env) {
		return fail(".env", "env %q is not a variable name", env)
	}
	if reservedEnv(env) {
		return fail(".env", "litterbox sets %s in the sandbox itself: choose another env", env)
	}
	d.Env = env
	return d, nil
}

func controlChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// CheckCommitted refuses secrets in the committed file's content: it comes
// with the code a sandbox holds, which an agent can change, and a secret
// declared there could send a value anywhere.
func CheckCommitted(file string, data []byte) error {
	line, ok := keyLines(data)["secrets"]
	if !ok {
		return nil
	}
	return fmt.Errorf("%s:%d: secrets can only be declared in %s or %s: the committed file comes with the code a sandbox holds, which an agent can change (see docs/secrets.md)",
		file, line, LocalFile, userFileText)
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

// keyLines maps each key of a TOML document, by dotted name, to the line
// it is at (a table's: its header's).
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	var walk func(prefix []string, n *unstable.Node)
	walk = func(prefix []string, n *unstable.Node) {
		it := n.Key()
		key := slices.Clone(prefix)
		line := 0
		for it.Next() {
			k := it.Node()
			key = append(key, string(k.Data))
			if line == 0 {
				line = p.Shape(k.Raw).Start.Line
			}
			// Each table a dotted key opens is at its line too.
			if _, ok := lines[strings.Join(key, ".")]; !ok {
				lines[strings.Join(key, ".")] = line
			}
		}
		lines[strings.Join(key, ".")] = line
		if v := n.Value(); v != nil && v.Kind == unstable.InlineTable {
			kids := v.Children()
			for kids.Next() {
				walk(key, kids.Node())
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = table[:0]
			it := e.Key()
			line := 0
			for it.Next() {
				table = append(table, string(it.Node().Data))
				if line == 0 {
					line = p.Shape(it.Node().Raw).Start.Line
				}
				if k := strings.Join(table, "."); lines[k] == 0 {
					lines[k] = line
				}
			}
		case unstable.KeyValue:
			walk(table, e)
		}
	}
	return lines
}

// Value is a secret's value, in memory only. It prints as a mark, never as
// itself, and will not marshal: only Reveal gives it, where it goes to the
// gateway.
type Value struct{ v string }

const mark = "[secret value]"

// Reveal is the value itself.
func (v Value) Reveal() string { return v.v }

// String is a mark.
func (Value) String() string { return mark }

// GoString is a mark.
func (Value) GoString() string { return mark }

// Format writes a mark, whatever the verb.
func (Value) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, mark) }

// MarshalJSON refuses.
func (Value) MarshalJSON() ([]byte, error) {
	return nil, errors.New("a secret's value is never marshalled")
}

// MarshalText refuses.
func (Value) MarshalText() ([]byte, error) {
	return nil, errors.New("a secret's value is never marshalled")
}

// maxValue bounds what a file or command gives.
const maxValue = 8 << 10

// Fetch reads d's value from its source on the host: the variable, the
// file, or the command's standard output (run through r, which logs its
// argv, never its output), less one line end. Its errors name the secret,
// never the value.
func Fetch(ctx context.Context, r runner.Runner, d Declaration) (Value, error) {
	fail := func(format string, args ...any) (Value, error) {
		msg := fmt.Sprintf("secret %q: ", d.Name) + fmt.Sprintf(format, args...)
		if d.Where != "" {
			msg += " (declared at " + d.Where + ")"
		}
		return Value{}, errors.New(msg)
	}
	var v string
	switch d.Source.Kind {
	case SourceEnv:
		v = os.Getenv(d.Source.Ref)
		if v == "" {
			return fail("the environment variable %s is not set or empty: set it where litterbox runs", d.Source.Ref)
		}
	case SourceFile:
		path := d.Source.Ref
		if rest, ok := strings.CutPrefix(path, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return fail("%v", err)
			}
			path = filepath.Join(home, rest)
		}
		f, err := os.Open(path)
		if err != nil {
			return fail("read %s: %v", path, errors.Unwrap(err))
		}
		b, err := io.ReadAll(io.LimitReader(f, maxValue+1))
		f.Close()
		if err != nil {
			return fail("read %s: %v", path, err)
		}
		v = string(b)
		if v == "" {
			return fail("%s is empty", path)
		}
	case SourceCommand:
		res, err := r.Run(ctx, runner.New(d.Source.Command[0], d.Source.Command[1:]...).As(runner.Control))
		var ee *runner.ExitError
		var ni *runner.NotInstalledError
		switch {
		case errors.As(err, &ni):
			return fail("%v", ni)
		case errors.As(err, &ee):
			return fail("its command %s failed: exit status %d: %s", runner.Quote(d.Source.Command...), ee.ExitCode, clip(strings.TrimSpace(ee.Stderr)))
		case err != nil:
			return fail("its command %s: %v", runner.Quote(d.Source.Command...), err)
		}
		if len(res.Stdout) > maxValue {
			return fail("its command %s printed more than %d bytes", runner.Quote(d.Source.Command...), maxValue)
		}
		v = string(res.Stdout)
		clear(res.Stdout)
		if v == "" {
			return fail("its command %s printed nothing: the value is what it prints", runner.Quote(d.Source.Command...))
		}
	default:
		return fail("no source")
	}
	v = strings.TrimSuffix(strings.TrimSuffix(v, "\n"), "\r")
	switch {
	case len(v) > maxValue:
		return fail("its value is longer than %d bytes", maxValue)
	case controlChar(v):
		return fail("its value holds a control character (a line break?): it goes in a header, where that cannot be")
	case len(v) < gateway.MinSecretValue:
		return fail("its value is shorter than %d bytes: answers are scrubbed of it, and a short value would be found where it is no secret", gateway.MinSecretValue)
	}
	return Value{v: v}, nil
}

func clip(s string) string {
	if len(s) > 1024 {
		return s[:1024] + "..."
	}
	return s
}

// Binding is a secret as one sandbox holds it: its name, the variable and
// the random placeholder in it. Never the value: a binding may be kept on
// disk, shown, and put in the sandbox's environment.
type Binding struct {
	Name        string `json:"name"`
	Env         string `json:"env"`
	Placeholder string `json:"placeholder"`
}

// SandboxBindings are one sandbox's bindings.
type SandboxBindings struct {
	Sandbox  string    `json:"sandbox"`
	Bindings []Binding `json:"bindings"`
}

// Placeholder makes a new placeholder for secret name:
// litterbox-secret-NAME-<26 random base32 characters, 128 bits>. It names
// the secret, so that whoever sees it knows what it stands for, and is of
// characters a header, a URL's userinfo and a DNS label all take.
func Placeholder(name string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "litterbox-secret-" + name + "-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// Bind makes one sandbox's bindings of ds: a new placeholder each.
func Bind(ds []Declaration) []Binding {
	out := make([]Binding, 0, len(ds))
	for _, d := range ds {
		out = append(out, Binding{Name: d.Name, Env: d.Env, Placeholder: Placeholder(d.Name)})
	}
	return out
}

// Env is the sandbox's environment of bs: VARIABLE=PLACEHOLDER.
func Env(bs []Binding) []string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.Env+"="+b.Placeholder)
	}
	return out
}

// Prepare fetches the value of each of a sandbox's bindings and makes what
// its gateway gets (egress.SetSecrets), with roots, more CA certificates
// (PEM) the gateway trusts for the real servers. The first secret that
// cannot be had stops it, named: nothing is sent.
func Prepare(ctx context.Context, r runner.Runner, ds []Declaration, bs []Binding, roots []string) (gateway.Secrets, error) {
	out := gateway.Secrets{Roots: roots}
	for _, b := range bs {
		i := slices.IndexFunc(ds, func(d Declaration) bool { return d.Name == b.Name })
		if i < 0 {
			return gateway.Secrets{}, fmt.Errorf("secret %q is no longer declared, and the sandbox holds its placeholder in %s: declare it again in %s or %s (see docs/secrets.md)", b.Name, b.Env, LocalFile, userFileText)
		}
		d := ds[i]
		v, err := Fetch(ctx, r, d)
		if err != nil {
			return gateway.Secrets{}, err
		}
		out.Secrets = append(out.Secrets, gateway.Secret{Name: d.Name, Placeholder: b.Placeholder, Value: v.Reveal(), Hosts: d.Hosts, Header: d.Header, Basic: d.Basic})
	}
	return out, nil
}

// Row is one secret as `litterbox secrets` shows it.
type Row struct {
	Name string `json:"name"`
	// Source is the kind of source ("env", "file", "command"), or "" for
	// a secret sandboxes hold that is no longer declared.
	Source string   `json:"source"`
	Hosts  []string `json:"hosts"`
	Sent   string   `json:"sent"`
	Env    string   `json:"env"`
	Where  string   `json:"where,omitempty"`
	// Sandboxes are the running sandboxes bound to it, sorted.
	Sandboxes []string `json:"sandboxes"`
}

// List is what `litterbox secrets` shows: each declared secret, where it
// comes from (the kind, not the variable's or file's content), where it
// may go and how, and the running sandboxes that hold a placeholder of it;
// then secrets sandboxes hold that are no longer declared.
func List(ds []Declaration, bound []SandboxBindings) []Row {
	rows := []Row{}
	holders := map[string][]string{}
	envs := map[string]string{}
	for _, sb := range bound {
		for _, b := range sb.Bindings {
			holders[b.Name] = append(holders[b.Name], sb.Sandbox)
			envs[b.Name] = b.Env
		}
	}
	for _, d := range ds {
		rows = append(rows, Row{Name: d.Name, Source: d.Source.Kind, Hosts: d.Hosts, Sent: d.Sent(), Env: d.Env, Where: d.Where, Sandboxes: sorted(holders[d.Name])})
		delete(holders, d.Name)
	}
	var gone []string
	for name := range holders {
		gone = append(gone, name)
	}
	sort.Strings(gone)
	for _, name := range gone {
		rows = append(rows, Row{Name: name, Env: envs[name], Hosts: []string{}, Sandboxes: sorted(holders[name])})
	}
	return rows
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// WriteTable writes rows as a table.
func WriteTable(w io.Writer, rows []Row) {
	if len(rows) == 0 {
		fmt.Fprintf(w, "No secrets are declared: declare them in %s or %s (see docs/secrets.md).\n", LocalFile, userFileText)
		return
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tHOSTS\tSENT AS\tSANDBOX VARIABLE\tBOUND TO")
	for _, r := range rows {
		src, sent := cmp.Or(r.Source, "(no longer declared)"), cmp.Or(r.Sent, "-")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, src, cmp.Or(strings.Join(r.Hosts, ", "), "-"), sent, r.Env, cmp.Or(strings.Join(r.Sandboxes, ", "), "-"))
	}
	tw.Flush()
	_, _ = w.Write(b.Bytes())
}
