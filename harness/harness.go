// Package harness knows the agent harnesses `litterbox run` runs inside a
// sandbox (Claude Code, Codex, Gemini CLI, opencode): where each one's
// released build is in the local cache (the one scripts/ensure-harnesses.sh
// fills), what it needs of the image (glibc, node, nothing), the variable
// that holds the model's API key and the one that names the model API, and
// the model API's host. It runs nothing: the sandbox service does
// (docs/run.md).
package harness

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/litterbox-dev/litterbox/secrets"
)

// Needs is what a harness's build needs of the sandbox's image.
type Needs string

// What builds need.
const (
	// NeedsNothing: a static executable (Codex's, musl).
	NeedsNothing Needs = ""
	// NeedsGlibc: a dynamically linked glibc executable (Claude Code's
	// and opencode's), which busybox and Alpine cannot run.
	NeedsGlibc Needs = "glibc"
	// NeedsNode: a script run by node 20 or later (Gemini CLI's bundle;
	// Debian bookworm's node is 18).
	NeedsNode Needs = "node 20 or later"
)

// Mount is where a harness's build is mounted in the sandbox, read-only.
const Mount = "/opt/litterbox/harness"

// Harness is one harness `litterbox run` knows.
type Harness struct {
	// Name is how the user names it: claude, codex, gemini, opencode.
	Name string
	// Exe is its executable inside the cached package.
	Exe string
	// Needs is what it needs of the image.
	Needs Needs
	// KeyEnv is the variable it reads the model's API key from; the
	// sandbox's holds a placeholder.
	KeyEnv string
	// BaseURLEnv names the model API when the user sets it (a proxy, a
	// stand-in); it passes into the sandbox.
	BaseURLEnv string
	// Config, when set, is the settings Argv passes on the command line,
	// given the base URL the user set ("" for none): for a harness that
	// reads it only from its settings.
	Config func(baseURL string) []string
	// Host is the model API's host when BaseURLEnv is not set.
	Host string
	// Env is what it runs with besides: no telemetry, no updater.
	Env []string
	// Home are files its home starts with, by path under it (kept when
	// there already): what a person would otherwise answer at its first
	// start, which in a sandbox is every start.
	Home map[string]string
	// Settings is its settings file, under a home: what --with-config
	// copies (UserSettings).
	Settings string
	// Prog, for `litterbox run --cmd PROG`, is a program of the image run
	// instead of a cached build (Exe is then "").
	Prog string
}

// Known are the harnesses, by name. Their versions are whatever the cache
// holds (scripts/ensure-harnesses.sh pins them).
var Known = []Harness{
	{Name: "claude", Exe: "claude", Settings: ".claude/settings.json", Needs: NeedsGlibc, KeyEnv: "ANTHROPIC_API_KEY", BaseURLEnv: "ANTHROPIC_BASE_URL", Host: "api.anthropic.com",
		Env: []string{"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"},
		// Its first start's onboarding (a theme, a check that reaches
		// api.anthropic.com whatever the base URL, the folder's trust): the
		// sandbox is the boundary, and its /src the only folder.
		Home: map[string]string{".claude.json": `{"hasCompletedOnboarding": true, "theme": "dark", "projects": {"/src": {"hasTrustDialogAccepted": true}}}`}},
	{Name: "codex", Exe: "vendor/x86_64-unknown-linux-musl/bin/codex", Settings: ".codex/config.toml", Needs: NeedsNothing, KeyEnv: "OPENAI_API_KEY", BaseURLEnv: "OPENAI_BASE_URL", Config: codexConfig, Host: "api.openai.com",
		// Codex reads its roots from here as well as SSL_CERT_FILE.
		Env: []string{"CODEX_CA_CERTIFICATE=/run/litterbox-gw/ca-bundle.pem"}},
	{Name: "gemini", Exe: "bundle/gemini.js", Settings: ".gemini/settings.json", Needs: NeedsNode, KeyEnv: "GEMINI_API_KEY", BaseURLEnv: "GOOGLE_GEMINI_BASE_URL", Host: "generativelanguage.googleapis.com",
		// /src trusted, as Claude Code's: the sandbox is the boundary.
		Env: []string{"GEMINI_CLI_NO_RELAUNCH=true", "GEMINI_CLI_TRUST_WORKSPACE=true"},
		// The key in GEMINI_API_KEY is the way it signs in (without this, a
		// headless run stops: "Invalid auth method selected"); no updates,
		// no telemetry.
		Home: map[string]string{".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}, "telemetry": {"enabled": false}, "privacy": {"usageStatisticsEnabled": false}}`}},
	{Name: "opencode", Exe: "bin/opencode", Settings: ".config/opencode/opencode.json", Needs: NeedsGlibc, KeyEnv: "ANTHROPIC_API_KEY", BaseURLEnv: "ANTHROPIC_BASE_URL", Host: "api.anthropic.com",
		// models.dev's catalogue is not fetched: the egress policy refuses it.
		Env: []string{"OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_MODELS_FETCH=1"}},
}

// codexConfig has Codex use the OpenAI API through a provider of its own
// settings, with the key from OPENAI_API_KEY (the placeholder) and never a
// ChatGPT login, over https: its built-in provider tries a Responses
// WebSocket first, which the gateway does not carry to a host a secret is
// bound to (it could not scrub what comes back), 7 times (7 s) before it
// falls back, and reads no base URL from the environment.
func codexConfig(baseURL string) []string {
	base := cmp.Or(baseURL, "https://api.openai.com/v1")
	var args []string
	for _, kv := range []string{
		`model_provider="litterbox"`,
		`model_providers.litterbox.name="OpenAI (key held by litterbox)"`,
		"model_providers.litterbox.base_url=" + strconv.Quote(base),
		`model_providers.litterbox.env_key="OPENAI_API_KEY"`,
		`model_providers.litterbox.wire_api="responses"`,
	} {
		args = append(args, "-c", kv)
	}
	return args
}

// ErrUnknown is a harness name Lookup does not know.
var ErrUnknown = errors.New("unknown harness")

// ErrNotCached is a harness whose build is not in the cache.
var ErrNotCached = errors.New("harness not cached")

// ErrNoKey is a model API key that is neither declared nor set.
var ErrNoKey = errors.New("no model API key")

// Lookup is the harness named name.
func Lookup(name string) (*Harness, error) {
	for i := range Known {
		if Known[i].Name == name {
			return &Known[i], nil
		}
	}
	names := make([]string, 0, len(Known))
	for _, h := range Known {
		names = append(names, h.Name)
	}
	return nil, fmt.Errorf("%w %q: litterbox run knows %s; run another program with --cmd PROG", ErrUnknown, name, strings.Join(names, ", "))
}

// DefaultCache is the cache scripts/ensure-harnesses.sh fills:
// $LITTERBOX_HARNESS_CACHE, else $LITTERBOX_CACHE/harnesses, else
// /var/cache/litterbox/harnesses.
func DefaultCache(getenv func(string) string) string {
	if d := getenv("LITTERBOX_HARNESS_CACHE"); d != "" {
		return d
	}
	return filepath.Join(cmp.Or(getenv("LITTERBOX_CACHE"), "/var/cache/litterbox"), "harnesses")
}

// Build is the directory of h's newest build in cache (NAME-VERSION, as
// ensure-harnesses.sh unpacks each package), holding its executable.
func (h *Harness) Build(cache string) (string, error) {
	dirs, _ := filepath.Glob(filepath.Join(cache, h.Name+"-*"))
	var found []string
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, h.Exe)); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return "", fmt.Errorf("%w: %s is not in %s: run scripts/ensure-harnesses.sh (it fetches the pinned builds from npm), or name a cache that holds %s-VERSION/%s with --harness-cache or LITTERBOX_HARNESS_CACHE", ErrNotCached, h.Name, cache, h.Name, h.Exe)
	}
	slices.SortFunc(found, func(a, b string) int { return compareVersions(filepath.Base(a), filepath.Base(b)) })
	return found[len(found)-1], nil
}

// compareVersions orders NAME-1.2.10 after NAME-1.2.9.
func compareVersions(a, b string) int {
	pa, pb := strings.FieldsFunc(a, isSep), strings.FieldsFunc(b, isSep)
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
		} else if c := strings.Compare(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(pa), len(pb))
}

func isSep(r rune) bool { return r == '-' || r == '.' }

// Argv is the command that runs h's build from Mount with args (and the
// base URL the user set, for a harness that takes it only as a setting).
func (h *Harness) Argv(args []string, getenv func(string) string) []string {
	if h.Prog != "" {
		return append([]string{h.Prog}, args...)
	}
	argv := []string{Mount + "/" + h.Exe}
	if h.Needs == NeedsNode {
		argv = []string{"node", argv[0]}
	}
	if h.Config != nil {
		argv = append(argv, h.Config(getenv(h.BaseURLEnv))...)
	}
	return append(argv, args...)
}

// Key is the model's API key of h as a secret of the sandbox
// (docs/secrets.md): the user's declaration whose variable is h.KeyEnv
// when there is one (extra is then nil: nothing to add), else one made
// from the user's environment, bound to the model API's host. allow is
// the egress entry the model API needs. getenv reads the user's
// environment.
func (h *Harness) Key(declared []secrets.Declaration, getenv func(string) string) (extra []secrets.Declaration, allow []string, err error) {
	host, err := h.APIHost(getenv)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range declared {
		if d.Env == h.KeyEnv {
			return nil, slices.Clone(d.Hosts), nil
		}
	}
	if getenv(h.KeyEnv) == "" {
		return nil, nil, fmt.Errorf("%w for %s: %s is not set: set it where litterbox runs (it never enters the sandbox: the sandbox holds a placeholder, the egress gateway adds the key on the way to %s), or declare it as a secret with env = %q in .litterbox.local.toml (docs/run.md); a subscription login (OAuth) is not carried into a sandbox", ErrNoKey, h.Name, h.KeyEnv, host, h.KeyEnv)
	}
	d := secrets.Declaration{Name: h.Name + "-api-key", Source: secrets.Source{Kind: secrets.SourceEnv, Ref: h.KeyEnv}, Hosts: []string{host}, Env: h.KeyEnv}
	return []secrets.Declaration{d}, []string{host}, nil
}

// APIHost is the model API's host as an egress entry: the host (and port,
// when not the scheme's default) of h.BaseURLEnv when the user set it,
// else h.Host.
func (h *Harness) APIHost(getenv func(string) string) (string, error) {
	raw := getenv(h.BaseURLEnv)
	if raw == "" {
		return h.Host, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("%s=%q is not an http(s) URL", h.BaseURLEnv, raw)
	}
	if u.Scheme == "http" {
		// The key would cross the gateway in the clear, which it refuses
		// for any placeholder (docs/secrets.md).
		return "", fmt.Errorf("%s=%q is plain http: the egress gateway adds the API key only over https (docs/run.md)", h.BaseURLEnv, raw)
	}
	if p := u.Port(); p != "" && p != "443" {
		return net.JoinHostPort(u.Hostname(), p), nil
	}
	return u.Hostname(), nil
}

// Wrapper is the shell script (sh -c SCRIPT litterbox-run ARGV...) that
// makes h's home, writes settings (UserSettings, --with-config; nil for
// none) as its settings file, puts in the files it starts with where
// missing, and runs ARGV.
func (h *Harness) Wrapper(settings []byte) string {
	script := `mkdir -p "$HOME"`
	if settings != nil {
		script += " && " + writeFile(h.Settings, settings)
	}
	paths := make([]string, 0, len(h.Home))
	for p := range h.Home {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		script += fmt.Sprintf(` && { [ -e "$HOME/%s" ] || { %s; }; }`, p, writeFile(p, []byte(h.Home[p])))
	}
	return script + ` && exec "$@"`
}

// shellQuote is s as one sh word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// RunMark is the variable every process of a run inherits, holding Mark:
// a later run finds a run still going by it (one whose litterbox was
// killed). It is a notice, not a boundary: the harness can drop it.
const RunMark = "LITTERBOX_RUN"

// Mark is h's name as RunMark holds it: letters, digits, '.', '_', '-'.
func (h *Harness) Mark() string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r == '.' || r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, h.Name)
}

// RunEnv is h's environment in the sandbox besides the container's (which
// holds the key's placeholder, the proxy and the CA bundle): its home,
// what it runs with, and the base URL when the user set one.
func (h *Harness) RunEnv(home string, getenv func(string) string) []string {
	env := append([]string{"HOME=" + home, RunMark + "=" + h.Mark()}, h.Env...)
	if v := getenv(h.BaseURLEnv); h.BaseURLEnv != "" && v != "" {
		env = append(env, h.BaseURLEnv+"="+v)
	}
	return env
}
