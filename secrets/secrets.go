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
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/internal/dotenv"
	"github.com/litterbox-dev/litterbox/internal/secretdecl"
	"github.com/litterbox-dev/litterbox/runner"
)

// Where secrets are declared: the repository's local file (git-ignored,
// the user's) and the user's own configuration file (UserFile), never the
// committed file.
const (
	LocalFile     = secretdecl.LocalFile
	CommittedFile = secretdecl.CommittedFile
)

// Source kinds.
const (
	SourceEnv     = secretdecl.SourceEnv
	SourceFile    = secretdecl.SourceFile
	SourceCommand = secretdecl.SourceCommand
	SourceDotenv  = secretdecl.SourceDotenv
)

// Source is where a secret's value comes from, on the host.
type Source = secretdecl.Source

// Declaration is one secret as the user declared it.
type Declaration = secretdecl.Declaration

// userFileText is UserFile as messages name it.
const userFileText = secretdecl.UserFileText

// UserFile is the user's own configuration file:
// $XDG_CONFIG_HOME/litterbox/config.toml, or ~/.config/litterbox/config.toml.
func UserFile() string { return secretdecl.UserFile() }

// LoadUser reads the secrets of UserFile; none when there is no such file.
func LoadUser() ([]Declaration, error) { return secretdecl.LoadUser() }

// Parse reads the [secrets] tables of a configuration file's content
// (file names it in messages), checks each, and returns them sorted by
// name, every default filled in (secretdecl.Parse).
func Parse(file string, data []byte) ([]Declaration, error) { return secretdecl.Parse(file, data) }

// CheckCommitted refuses secrets in the committed file's content: it comes
// with the code a sandbox holds, which an agent can change.
func CheckCommitted(file string, data []byte) error { return secretdecl.CheckCommitted(file, data) }

// Merge lays the declarations of over over those of base (the local file
// over the user's own file): a secret over declares replaces base's of the
// same name whole.
func Merge(base, over []Declaration) []Declaration { return secretdecl.Merge(base, over) }

func controlChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
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
	case SourceDotenv:
		data, err := os.ReadFile(d.Source.Ref)
		if err != nil {
			return fail("read %s: %v", d.Source.Ref, errors.Unwrap(err))
		}
		var ok bool
		if v, ok = dotenv.Value(data, d.Source.Var); !ok {
			return fail("%s no longer assigns %s", d.Source.Ref, d.Source.Var)
		}
		if v == "" {
			return fail("%s of %s is empty", d.Source.Var, d.Source.Ref)
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
	case len(v) < control.MinSecretValue:
		return fail("its value is shorter than %d bytes: answers are scrubbed of it, and a short value would be found where it is no secret", control.MinSecretValue)
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
	// File and Key are, for a value of a dotenv file (SourceDotenv), the
	// file (absolute, on the host) and the key whose value the sandbox's
	// copy of it holds the placeholder in, instead of Env.
	File string `json:"file,omitempty"`
	Key  string `json:"key,omitempty"`
}

// Dotenv is the declaration of b, a dotenv file's value bound to hosts:
// its source is the binding itself.
func (b Binding) Dotenv(hosts []string) Declaration {
	return Declaration{Name: b.Name, Source: Source{Kind: SourceDotenv, Ref: b.File, Var: b.Key}, Hosts: hosts, Where: b.File}
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
		b := Binding{Name: d.Name, Env: d.Env, Placeholder: Placeholder(d.Name)}
		if d.Source.Kind == SourceDotenv {
			b.File, b.Key = d.Source.Ref, d.Source.Var
		}
		out = append(out, b)
	}
	return out
}

// Env is the sandbox's environment of bs: VARIABLE=PLACEHOLDER (a dotenv
// file's value is held in the file, not there).
func Env(bs []Binding) []string {
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		if b.Env != "" {
			out = append(out, b.Env+"="+b.Placeholder)
		}
	}
	return out
}

// Prepare fetches the value of each of a sandbox's bindings and makes what
// its gateway gets (egress.SetSecrets), with roots, more CA certificates
// (PEM) the gateway trusts for the real servers. The first secret that
// cannot be had stops it, named: nothing is sent.
func Prepare(ctx context.Context, r runner.Runner, ds []Declaration, bs []Binding, roots []string) (control.Secrets, error) {
	out := control.Secrets{Roots: roots}
	for _, b := range bs {
		i := slices.IndexFunc(ds, func(d Declaration) bool { return d.Name == b.Name })
		if i < 0 {
			return control.Secrets{}, fmt.Errorf("secret %q is no longer declared, and the sandbox holds its placeholder in %s: declare it again in %s or %s (see docs/secrets.md)", b.Name, b.Env, LocalFile, userFileText)
		}
		d := ds[i]
		v, err := Fetch(ctx, r, d)
		if err != nil {
			return control.Secrets{}, err
		}
		out.Secrets = append(out.Secrets, control.Secret{Name: d.Name, Placeholder: b.Placeholder, Value: v.Reveal(), Hosts: d.Hosts, Header: d.Header, Basic: d.Basic})
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
// then secrets sandboxes hold that are no longer declared, and the values
// of dotenv files they hold placeholders of.
func List(ds []Declaration, bound []SandboxBindings) []Row {
	rows := []Row{}
	holders := map[string][]string{}
	envs := map[string]string{}
	dot := map[string]bool{} // the values of dotenv files, which the user marks, not declares
	for _, sb := range bound {
		for _, b := range sb.Bindings {
			holders[b.Name] = append(holders[b.Name], sb.Sandbox)
			envs[b.Name] = b.Env
			if b.File != "" {
				envs[b.Name], dot[b.Name] = b.Key+" in "+b.File, true
			}
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
		src := ""
		if dot[name] {
			src = SourceDotenv
		}
		rows = append(rows, Row{Name: name, Source: src, Env: envs[name], Hosts: []string{}, Sandboxes: sorted(holders[name])})
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

// Roots are the CA certificates (PEM) the declarations' ca files hold, for
// Prepare: read on the host when the sandbox needs them, each file once.
func Roots(ds []Declaration) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, d := range ds {
		if d.CA == "" || seen[d.CA] {
			continue
		}
		seen[d.CA] = true
		path := d.CA
		if rest, ok := strings.CutPrefix(path, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, err
			}
			path = filepath.Join(home, rest)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("secret %q: read its ca %s: %v (declared at %s)", d.Name, path, errors.Unwrap(err), d.Where)
		}
		if !bytes.Contains(b, []byte("-----BEGIN CERTIFICATE-----")) {
			return nil, fmt.Errorf("secret %q: its ca %s holds no PEM certificate (declared at %s)", d.Name, path, d.Where)
		}
		out = append(out, string(b))
	}
	return out, nil
}
