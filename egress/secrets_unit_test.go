package egress

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/provider"
)

// fakeExec records each exec and answers with out.
type fakeExec struct {
	reqs   []provider.ExecRequest
	stdins []string
	out    string
	code   int
	stderr string
}

func (f *fakeExec) Exec(_ context.Context, r provider.ExecRequest) (provider.ExecResult, error) {
	var in string
	if r.Stdin != nil {
		b, _ := io.ReadAll(r.Stdin)
		in = string(b)
	}
	f.reqs, f.stdins = append(f.reqs, r), append(f.stdins, in)
	return provider.ExecResult{ExitCode: f.code, Stdout: []byte(f.out), Stderr: []byte(f.stderr)}, nil
}

// TestSetSecrets: the secrets travel on the exec's stdin, never in its
// argv or environment (which the runner logs, and process lists show); the
// answer, which holds no value, is read back.
func TestSetSecrets(t *testing.T) {
	const value = "ghp_THEREALVALUE_123"
	info := control.SecretsInfo{CA: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		Bound: []control.BoundInfo{{Name: "github", Placeholder: "litterbox-secret-github-abc", Hosts: []string{"github.com"}, Sent: "basic"}}}
	out, _ := json.Marshal(info)
	f := &fakeExec{out: string(out)}
	gw := provider.Ref{ID: "gw1"}
	got, err := SetSecrets(context.Background(), f, gw, control.Secrets{Secrets: []control.Secret{
		{Name: "github", Placeholder: "litterbox-secret-github-abc", Value: value, Hosts: []string{"github.com"}, Basic: "x-access-token:{}"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.CA != info.CA || len(got.Bound) != 1 || got.Bound[0].Name != "github" {
		t.Errorf("answer %+v", got)
	}
	r := f.reqs[0]
	if r.Ref != gw || !slices.Equal(r.Cmd, []string{ProgramDir + "/litterbox-gateway", "ctl", "secrets"}) || len(r.Env) != 0 {
		t.Errorf("exec %+v", r)
	}
	if !strings.Contains(f.stdins[0], value) {
		t.Errorf("stdin %q", f.stdins[0])
	}
	// A failure says what the gateway said: never a value (the gateway's
	// messages name the secret only).
	f = &fakeExec{code: 1, stderr: "litterbox-gateway: secrets: secret github: its value is shorter than 8 bytes"}
	if _, err := SetSecrets(context.Background(), f, gw, control.Secrets{}); err == nil || !strings.Contains(err.Error(), "secret github: its value is shorter") {
		t.Errorf("failure: %v", err)
	}
}

// TestWriteTrust: the CA goes on stdin to a script that puts the image's
// roots and the CA in the bundle the trust variables name, replacing it
// whole.
func TestWriteTrust(t *testing.T) {
	f := &fakeExec{}
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	if err := WriteTrust(context.Background(), f, provider.Ref{ID: "sb"}, ca); err != nil {
		t.Fatal(err)
	}
	r := f.reqs[0]
	if len(r.Cmd) != 3 || r.Cmd[0] != "sh" || !strings.Contains(r.Cmd[2], "/etc/ssl/certs/ca-certificates.crt") || !strings.Contains(r.Cmd[2], "mv -f") || !strings.Contains(r.Cmd[2], CABundle) {
		t.Errorf("cmd %q", r.Cmd)
	}
	if f.stdins[0] != string(ca) {
		t.Errorf("stdin %q", f.stdins[0])
	}
	env := TrustEnv()
	for _, v := range []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT"} {
		if !slices.Contains(env, v+"="+CABundle) {
			t.Errorf("TrustEnv has no %s: %q", v, env)
		}
	}
}

// startingExec answers as a gateway that is starting, with before in
// turn, then as fakeExec.
type startingExec struct {
	fakeExec
	before []provider.ExecResult
}

func (s *startingExec) Exec(ctx context.Context, r provider.ExecRequest) (provider.ExecResult, error) {
	res, err := s.fakeExec.Exec(ctx, r)
	if n := len(s.reqs); n <= len(s.before) {
		res = s.before[n-1]
	}
	return res, err
}

// TestCtlWaitsForAStartingGateway: a gateway just started (create, resume)
// has its program in place, then listens on its control socket, a moment
// later: the call is made again, its stdin whole each time, and does not
// fail. Another failure is not waited on.
func TestCtlWaitsForAStartingGateway(t *testing.T) {
	notInstalled := provider.ExecResult{ExitCode: 126, Stderr: []byte("OCI runtime exec failed: no such file or directory")}
	notListening := provider.ExecResult{ExitCode: 1, Stderr: []byte("litterbox-gateway: the gateway does not answer on its control socket: dial unix @litterbox-gateway-ctl: connect: connection refused")}
	f := &startingExec{fakeExec: fakeExec{out: `{"ca":"x"}`}, before: []provider.ExecResult{notInstalled, notListening}}
	if _, err := SetSecrets(context.Background(), f, provider.Ref{ID: "gw1"}, control.Secrets{Secrets: []control.Secret{{Name: "api", Value: "a-long-value"}}}); err != nil {
		t.Fatalf("a gateway that starts: %v", err)
	}
	if len(f.reqs) != 3 || f.stdins[0] != f.stdins[2] || !strings.Contains(f.stdins[2], "a-long-value") {
		t.Errorf("%d execs, stdins %q", len(f.reqs), f.stdins)
	}
	f = &startingExec{fakeExec: fakeExec{code: 1, stderr: "litterbox-gateway: secrets: secret api: its value is shorter than 8 bytes"}}
	if _, err := SetSecrets(context.Background(), f, provider.Ref{ID: "gw1"}, control.Secrets{}); err == nil || len(f.reqs) != 1 {
		t.Errorf("a refusal was asked %d times (%v), want once", len(f.reqs), err)
	}
}
