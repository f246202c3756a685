package egress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/provider"
)

// CABundle is the CA bundle of a sandbox with secrets: the image's own
// roots and the gateway's CA, which signs what the sandbox is shown for
// the hosts a secret is bound to. It is on the shared volume (in TrustDir,
// for a linked sandbox), made by WriteTrust; the sandbox can read it (and
// break it, as it can anything of its own: then its TLS to those hosts
// fails, nothing more).
const CABundle = Dir + "/ca-bundle.pem"

// TrustEnv is what a sandbox with secrets needs in its environment: the
// variables its TLS clients read their roots from, naming CABundle.
// OpenSSL, Go and Python's ssl (SSL_CERT_FILE), curl (CURL_CA_BUNDLE),
// Python's requests (REQUESTS_CA_BUNDLE), Node (NODE_EXTRA_CA_CERTS,
// added to its own), git (GIT_SSL_CAINFO), pip (PIP_CERT). A client that
// reads none of them (Java's keystore, a program with roots built in)
// refuses the gateway's certificates, and so reaches no bound host.
func TrustEnv() []string {
	var env []string
	for _, v := range []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT"} {
		env = append(env, v+"="+CABundle)
	}
	return env
}

// TrustDir is where CABundle goes in a sandbox linked to its gateway by
// network (ConfineLinked: Kubernetes), which shares no volume with it: a
// small in-memory directory at Dir, owned by the sandbox's user, as whom
// WriteTrust writes it (the host reads the CA from the gateway, and writes
// it in with an exec, as it writes every file it puts in a pod).
func TrustDir(user string) provider.Tmpfs {
	return provider.Tmpfs{Path: Dir, Size: 1 << 20, Mode: 0o755, Owner: user}
}

// SetSecrets gives the gateway its secrets, values and all, on the stdin
// of `litterbox-gateway ctl secrets` in its container: never in an
// argument or the environment, which the runner logs (--log-level debug)
// and process lists show. The answer holds no value: the secrets as the
// gateway holds them, and its CA's certificate (WriteTrust puts it in the
// sandbox). Tunnels to the hosts the change touches are cut.
func SetSecrets(ctx context.Context, e Execer, gw provider.Ref, s control.Secrets) (control.SecretsInfo, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return control.SecretsInfo{}, err
	}
	out, err := ctl(ctx, e, gw, b, "secrets")
	clear(b)
	if err != nil {
		return control.SecretsInfo{}, err
	}
	return parseSecretsInfo(out)
}

// GetSecrets is what the gateway holds, without values.
func GetSecrets(ctx context.Context, e Execer, gw provider.Ref) (control.SecretsInfo, error) {
	out, err := ctl(ctx, e, gw, nil, "secrets")
	if err != nil {
		return control.SecretsInfo{}, err
	}
	return parseSecretsInfo(out)
}

func parseSecretsInfo(out []byte) (control.SecretsInfo, error) {
	var info control.SecretsInfo
	if err := json.Unmarshal(out, &info); err != nil {
		return control.SecretsInfo{}, fmt.Errorf("egress gateway secrets: %w", err)
	}
	return info, nil
}

// imageRoots are where images keep their CA bundle, as Go looks for it:
// Debian and Ubuntu, Fedora and RHEL, openSUSE, OpenELEC, CentOS, Alpine.
var imageRoots = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// trustScript makes CABundle: the image's first bundle, then the CA on
// stdin, in a new file renamed over the old (the volume is the sandbox's:
// mktemp makes a new file, mv replaces a name, neither follows what the
// sandbox put there).
var trustScript = `set -e
umask 022
t=$(mktemp ` + Dir + `/.ca.XXXXXX)
for f in ` + strings.Join(imageRoots, " ") + `; do
  if [ -f "$f" ]; then cat "$f" >>"$t"; echo >>"$t"; break; fi
done
cat >>"$t"
mv -f "$t" ` + CABundle

// WriteTrust makes the sandbox's CABundle from its image's roots and ca,
// the gateway's CA certificate (SetSecrets's answer). Create runs it
// before anything in the sandbox uses TLS; so does a resume after a
// restart, which empties the volume and gives the gateway a new CA.
func WriteTrust(ctx context.Context, e Execer, sandbox provider.Ref, ca []byte) error {
	res, err := e.Exec(ctx, provider.ExecRequest{Ref: sandbox, Stdin: bytes.NewReader(ca), Cmd: []string{"sh", "-c", trustScript}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if err != nil {
		return fmt.Errorf("write the sandbox's CA bundle: %w", err)
	}
	return nil
}
