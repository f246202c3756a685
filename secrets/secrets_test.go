package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/runner"
)

const local = `# the user's own settings
image = "busybox:latest"

[secrets.github]
source = "env:LB_TEST_GITHUB_TOKEN"
hosts = ["github.com", "*.github.com"]
basic = "x-access-token:{}"

[secrets.openai]
command = ["pass", "show", "openai"]
hosts = ["api.openai.com"]
header = "Authorization: Bearer {}"
env = "OPENAI_API_KEY"

[secrets.npm-token]
source = "file:~/.npm-token"
hosts = ["registry.npmjs.org"]
`

// TestParse: the [secrets] tables of a file, each key checked, every
// default filled in; the rest of the file is not this package's.
func TestParse(t *testing.T) {
	ds, err := Parse(".litterbox.local.toml", []byte(local))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 {
		t.Fatalf("%d declarations: %+v", len(ds), ds)
	}
	gh, npm, oa := ds[0], ds[1], ds[2] // sorted by name
	if gh.Name != "github" || gh.Source.String() != "env:LB_TEST_GITHUB_TOKEN" || gh.Basic != "x-access-token:{}" ||
		gh.Env != "GITHUB" || strings.Join(gh.Hosts, " ") != "github.com *.github.com" || gh.Where != ".litterbox.local.toml:4" {
		t.Errorf("github: %+v", gh)
	}
	if npm.Name != "npm-token" || npm.Source.Kind != SourceFile || npm.Env != "NPM_TOKEN" || npm.Sent() != "placeholder" {
		t.Errorf("npm: %+v", npm)
	}
	if oa.Source.Kind != SourceCommand || strings.Join(oa.Source.Command, " ") != "pass show openai" || oa.Env != "OPENAI_API_KEY" || oa.Sent() != "header Authorization" {
		t.Errorf("openai: %+v", oa)
	}
	if ds, err := Parse("x.toml", []byte(`image = "x"`)); err != nil || len(ds) != 0 {
		t.Errorf("no secrets: %v %v", ds, err)
	}
}

// TestParseErrors: a mistake is refused with the file and line it is at,
// and what to write instead.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, toml, want string }{
		{"unknown key", "[secrets.a]\nsource = \"env:A\"\nhots = [\"a.com\"]\n", "f.toml:3: secret a: unknown key \"hots\""},
		{"no source", "[secrets.a]\nhosts = [\"a.com\"]\n", "f.toml:1: secret a: no source"},
		{"two sources", "[secrets.a]\nsource = \"env:A\"\ncommand = [\"x\"]\nhosts = [\"a.com\"]\n", "f.toml:3: secret a: both source and command"},
		{"a bad source", "[secrets.a]\nsource = \"vault:x\"\nhosts = [\"a.com\"]\n", "f.toml:2: secret a: source \"vault:x\" is not env:VAR or file:PATH"},
		{"a relative file", "[secrets.a]\nsource = \"file:token.txt\"\nhosts = [\"a.com\"]\n", "f.toml:2: secret a: file:token.txt is not an absolute path"},
		{"no hosts", "[secrets.a]\nsource = \"env:A\"\n", "f.toml:1: secret a: no hosts"},
		{"a bad host", "[secrets.a]\nsource = \"env:A\"\nhosts = [\"a b.com\"]\n", "f.toml:3: secret a: hosts:"},
		{"header and basic", "[secrets.a]\nsource = \"env:A\"\nhosts = [\"a.com\"]\nheader = \"X: {}\"\nbasic = \"u:{}\"\n", "f.toml:5: secret a: header and basic"},
		{"a header without {}", "[secrets.a]\nsource = \"env:A\"\nhosts = [\"a.com\"]\nheader = \"Authorization: Bearer\"\n", "f.toml:4: secret a: header \"Authorization: Bearer\" has no {}"},
		{"user and basic", "[secrets.a]\nsource = \"env:A\"\nhosts = [\"a.com\"]\nuser = \"u\"\nbasic = \"u:{}\"\n", "f.toml:5: secret a: user and basic"},
		{"a bad name", "[secrets.\"A B\"]\nsource = \"env:A\"\nhosts = [\"a.com\"]\n", "f.toml:1: secret \"A B\""},
		{"a bad env", "[secrets.a]\nsource = \"env:A\"\nhosts = [\"a.com\"]\nenv = \"1X\"\n", "f.toml:4: secret a: env \"1X\""},
		{"a reserved env", "[secrets.a]\nsource = \"env:A\"\nhosts = [\"a.com\"]\nenv = \"HTTPS_PROXY\"\n", "litterbox sets HTTPS_PROXY"},
		{"one env twice", "[secrets.a]\nsource = \"env:A\"\nhosts = [\"a.com\"]\nenv = \"T\"\n[secrets.b]\nsource = \"env:A\"\nhosts = [\"a.com\"]\nenv = \"T\"\n", "secrets a and b both set T"},
		{"a wrong type", "[secrets.a]\nsource = 3\nhosts = [\"a.com\"]\n", "f.toml:2: secret a: source is"},
		{"not a table", "secrets = 3\n", "f.toml:1: secrets"},
		{"bad TOML", "[secrets.a\n", "f.toml:1"},
	} {
		_, err := Parse("f.toml", []byte(tc.toml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCommitted: the committed file may declare no secret: an agent can
// change it.
func TestCommitted(t *testing.T) {
	if err := CheckCommitted(".litterbox.toml", []byte("setup = [\"true\"]\n")); err != nil {
		t.Error(err)
	}
	err := CheckCommitted(".litterbox.toml", []byte("setup = [\"true\"]\n\n[secrets.github]\nsource = \"env:X\"\n"))
	if err == nil || !strings.Contains(err.Error(), ".litterbox.toml:3: secrets can only be declared in .litterbox.local.toml or") {
		t.Errorf("%v", err)
	}
}

// TestMerge: the repository's local file wins over the user's own file,
// a whole secret at a time.
func TestMerge(t *testing.T) {
	user, _ := Parse("config.toml", []byte("[secrets.github]\nsource = \"env:A\"\nhosts = [\"github.com\"]\n[secrets.other]\nsource = \"env:B\"\nhosts = [\"o.com\"]\n"))
	loc, _ := Parse(".litterbox.local.toml", []byte("[secrets.github]\ncommand = [\"gh\", \"auth\", \"token\"]\nhosts = [\"github.com\"]\n"))
	ds := Merge(user, loc)
	if len(ds) != 2 || ds[0].Source.Kind != SourceCommand || ds[0].Where != ".litterbox.local.toml:1" || ds[1].Name != "other" {
		t.Errorf("%+v", ds)
	}
}

// TestFetch: each source, its value trimmed of one line end; a source that
// fails says which secret, and what to do; nothing logged at debug level
// holds a value.
func TestFetch(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	const value = "s3cr3t-VALUE-0123456789"
	if err := os.WriteFile(filepath.Join(home, "tok"), []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LB_TEST_TOKEN", value)
	var logs bytes.Buffer
	lg := log.New(&logs)
	lg.SetLevel(log.DebugLevel)
	r := runner.Exec{Log: lg}
	ctx := context.Background()
	for _, src := range []Source{
		{Kind: SourceEnv, Ref: "LB_TEST_TOKEN"},
		{Kind: SourceFile, Ref: "~/tok"},
		{Kind: SourceCommand, Command: []string{"sh", "-c", "printf '%s\\r\\n' \"$LB_TEST_TOKEN\""}},
	} {
		v, err := Fetch(ctx, r, Declaration{Name: "t", Source: src})
		if err != nil {
			t.Fatalf("%v: %v", src, err)
		}
		if v.Reveal() != value {
			t.Errorf("%v: %q", src, v.Reveal())
		}
		if s := fmt.Sprintf("%v %s %+v %#v %q", v, v, v, v, v); strings.Contains(s, value) {
			t.Errorf("formatting a value shows it: %s", s)
		}
		if b, err := json.Marshal(v); err == nil || strings.Contains(string(b), value) {
			t.Errorf("a value marshals: %s %v", b, err)
		}
	}
	for _, tc := range []struct {
		src  Source
		want string
	}{
		{Source{Kind: SourceEnv, Ref: "LB_TEST_UNSET_VAR"}, `secret "t": the environment variable LB_TEST_UNSET_VAR is not set or empty`},
		{Source{Kind: SourceFile, Ref: "~/missing"}, `secret "t": read ` + filepath.Join(home, "missing")},
		{Source{Kind: SourceCommand, Command: []string{"sh", "-c", "echo 'vault is sealed' >&2; exit 3"}}, `secret "t": its command sh -c`},
		{Source{Kind: SourceCommand, Command: []string{"sh", "-c", "echo 'vault is sealed' >&2; exit 3"}}, `exit status 3: vault is sealed`},
		{Source{Kind: SourceCommand, Command: []string{"lb-no-such-password-manager"}}, `secret "t": lb-no-such-password-manager is not installed`},
		{Source{Kind: SourceCommand, Command: []string{"true"}}, `secret "t": its command true printed nothing`},
		{Source{Kind: SourceCommand, Command: []string{"sh", "-c", "echo short"}}, `secret "t": its value is shorter than 8 bytes`},
		{Source{Kind: SourceCommand, Command: []string{"sh", "-c", "printf 'two\\nlines-of-value\\n'"}}, `secret "t": its value holds a control character`},
	} {
		_, err := Fetch(ctx, r, Declaration{Name: "t", Source: tc.src, Where: "f.toml:1"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.src, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "lines-of-value") {
			t.Errorf("the error quotes the value: %v", err)
		}
	}
	if strings.Contains(logs.String(), value) {
		t.Errorf("the debug log holds the value:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "LB_TEST_TOKEN") {
		t.Errorf("the debug log does not show the command that ran:\n%s", logs.String())
	}
}

// TestBind: each sandbox gets placeholders of its own, random, that name
// the secret; its environment holds them, never a value.
func TestBind(t *testing.T) {
	ds, _ := Parse("f.toml", []byte(local))
	a, b := Bind(ds), Bind(ds)
	re := regexp.MustCompile(`^litterbox-secret-[a-z0-9_-]+-[a-z2-7]{26}$`)
	for i := range a {
		if !re.MatchString(a[i].Placeholder) || !strings.Contains(a[i].Placeholder, a[i].Name) {
			t.Errorf("placeholder %q", a[i].Placeholder)
		}
		if a[i].Placeholder == b[i].Placeholder {
			t.Errorf("two sandboxes share %q", a[i].Placeholder)
		}
	}
	env := Env(a)
	if len(env) != 3 || !strings.HasPrefix(env[0], "GITHUB="+a[0].Placeholder) || !strings.HasPrefix(env[2], "OPENAI_API_KEY=litterbox-secret-openai-") {
		t.Errorf("env %q", env)
	}
}

// TestPrepare: what the gateway gets: each binding's value fetched, with
// its hosts and how it is sent; the first secret that fails stops it,
// named.
func TestPrepare(t *testing.T) {
	t.Setenv("LB_TEST_GITHUB_TOKEN", "ghp_0123456789abcdef")
	ds, _ := Parse("f.toml", []byte("[secrets.github]\nsource = \"env:LB_TEST_GITHUB_TOKEN\"\nhosts = [\"github.com\"]\nuser = \"x-access-token\"\n"+
		"[secrets.api]\ncommand = [\"sh\", \"-c\", \"echo api-key-0123456789\"]\nhosts = [\"api.example.com\"]\nheader = \"X-Key: {}\"\n"))
	bs := Bind(ds)
	out, err := Prepare(context.Background(), runner.Exec{Log: log.New(&bytes.Buffer{})}, ds, bs, []string{"ROOT"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Secrets) != 2 || out.Roots[0] != "ROOT" {
		t.Fatalf("%+v", out)
	}
	api, gh := out.Secrets[0], out.Secrets[1]
	if gh.Value != "ghp_0123456789abcdef" || gh.Basic != "x-access-token:{}" || gh.Placeholder != bs[1].Placeholder || gh.Hosts[0] != "github.com" {
		t.Errorf("github %+v", gh)
	}
	if api.Value != "api-key-0123456789" || api.Header != "X-Key: {}" {
		t.Errorf("api %+v", api)
	}
	bad, _ := Parse("f.toml", []byte("[secrets.vault]\ncommand = [\"sh\", \"-c\", \"exit 1\"]\nhosts = [\"v.example\"]\n"))
	if _, err := Prepare(context.Background(), runner.Exec{Log: log.New(&bytes.Buffer{})}, bad, Bind(bad), nil); err == nil || !strings.Contains(err.Error(), `secret "vault"`) {
		t.Errorf("a failing source: %v", err)
	}
	// A binding whose declaration is gone (the user removed it) is an
	// error naming it: the sandbox's variable would hold a dead
	// placeholder.
	if _, err := Prepare(context.Background(), runner.Exec{}, nil, bs, nil); err == nil || !strings.Contains(err.Error(), `secret "api" is no longer declared`) {
		t.Errorf("a binding without a declaration: %v", err)
	}
}

// TestList: `litterbox secrets` shows names, hosts, where each comes from
// and how it is sent, and which sandboxes hold it; never a value.
func TestList(t *testing.T) {
	t.Setenv("LB_TEST_GITHUB_TOKEN", "ghp_SHOULD_NEVER_SHOW")
	ds, _ := Parse(".litterbox.local.toml", []byte(local))
	bound := []SandboxBindings{{Sandbox: "beta", Bindings: Bind(ds[:1])}, {Sandbox: "alpha", Bindings: Bind(ds)}}
	rows := List(ds, bound)
	if rows[0].Name != "github" || strings.Join(rows[0].Sandboxes, ",") != "alpha,beta" || rows[0].Source != "env" || strings.Join(rows[1].Sandboxes, ",") != "alpha" {
		t.Errorf("%+v", rows)
	}
	var out bytes.Buffer
	WriteTable(&out, rows)
	want := `NAME       SOURCE   HOSTS                     SENT AS                  SANDBOX VARIABLE  BOUND TO
github     env      github.com, *.github.com  basic x-access-token:{}  GITHUB            alpha, beta
npm-token  file     registry.npmjs.org        placeholder              NPM_TOKEN         alpha
openai     command  api.openai.com            header Authorization     OPENAI_API_KEY    alpha
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
	b, _ := json.Marshal(rows)
	if strings.Contains(string(b)+out.String(), "ghp_SHOULD_NEVER_SHOW") || strings.Contains(string(b), "LB_TEST_GITHUB_TOKEN\":") {
		t.Errorf("a value shows: %s", b)
	}
	out.Reset()
	WriteTable(&out, nil)
	if !strings.Contains(out.String(), "No secrets are declared") {
		t.Errorf("empty: %q", out.String())
	}
}

// TestReserved: no secret may take a variable litterbox sets in a confined
// sandbox itself (the list lives below the egress package, so this is
// what keeps the two in step).
func TestReserved(t *testing.T) {
	for _, kv := range append(egress.Env(), egress.TrustEnv()...) {
		name, _, _ := strings.Cut(kv, "=")
		_, err := Parse(LocalFile, []byte(fmt.Sprintf("[secrets.x]\nsource = \"env:X\"\nhosts = [\"a.example\"]\nenv = %q\n", name)))
		if err == nil || !strings.Contains(err.Error(), "litterbox sets "+name) {
			t.Errorf("env = %s: %v", name, err)
		}
	}
}

func TestRoots(t *testing.T) {
	dir := t.TempDir()
	pem := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(pem, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := Parse(LocalFile, []byte(fmt.Sprintf("[secrets.a]\nsource = \"env:X\"\nhosts = [\"a.example\"]\nca = %q\n[secrets.b]\nsource = \"env:Y\"\nhosts = [\"b.example\"]\nca = %q\n", pem, pem)))
	if err != nil {
		t.Fatal(err)
	}
	roots, err := Roots(ds)
	if err != nil || len(roots) != 1 {
		t.Fatalf("roots %d, %v", len(roots), err)
	}
	if _, err := Parse(LocalFile, []byte("[secrets.a]\nsource = \"env:X\"\nhosts = [\"a.example\"]\nca = \"ca.pem\"\n")); err == nil || !strings.Contains(err.Error(), ".litterbox.local.toml:4: secret a: ca \"ca.pem\" is not an absolute path") {
		t.Errorf("a relative ca: %v", err)
	}
	ds[0].CA = filepath.Join(dir, "none.pem")
	if _, err := Roots(ds[:1]); err == nil || !strings.Contains(err.Error(), `secret "a": read its ca`) {
		t.Errorf("a missing ca: %v", err)
	}
}

func TestDotenvSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte("STRIPE_KEY=sk-old-0123456789\nSTRIPE_KEY='sk-live-0123456789' # live\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := Declaration{Name: "dotenv-env-stripe_key", Source: Source{Kind: SourceDotenv, Ref: path, Var: "STRIPE_KEY"}, Hosts: []string{"api.stripe.com"}}
	bs := Bind([]Declaration{d})
	if bs[0].File != path || bs[0].Key != "STRIPE_KEY" || bs[0].Env != "" {
		t.Errorf("binding %+v: want the file and key, no variable", bs[0])
	}
	if env := Env(bs); len(env) != 0 {
		t.Errorf("Env = %v: a dotenv file's placeholder is in the file, not the environment", env)
	}
	// restart: the declaration made again from the binding alone
	v, err := Fetch(context.Background(), runner.Exec{}, bs[0].Dotenv(d.Hosts))
	if err != nil || v.Reveal() != "sk-live-0123456789" {
		t.Errorf("Fetch = %q, %v; want the last assignment's value", v.Reveal(), err)
	}
	if err := os.WriteFile(path, []byte("OTHER=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(context.Background(), runner.Exec{}, d); err == nil || !strings.Contains(err.Error(), "no longer assigns STRIPE_KEY") {
		t.Errorf("err %v, want the key named", err)
	}
	rows := List(nil, []SandboxBindings{{Sandbox: "a", Bindings: bs}})
	if len(rows) != 1 || rows[0].Source != SourceDotenv || rows[0].Env != "STRIPE_KEY in "+path {
		t.Errorf("rows %+v", rows)
	}
}
