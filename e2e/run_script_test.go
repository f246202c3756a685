package e2e

import (
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/internal/enginetest/standin"
)

// The run_*.txtar scripts run the harnesses inside sandboxes with
// `litterbox run` (docs/run.md): the stand-in model API is then reached
// from the sandbox, through its egress gateway, which adds the API key.

func cmdStandinTLS(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: standin-tls HARNESS TURNS")
	}
	host := docker0Addr(ts)
	cert := hostCert(ts, "standin-ca.pem", host)
	startStandin(ts, args[0], args[1], func(turns []standin.Turn, record string) (*standin.Server, error) {
		l, err := net.Listen("tcp4", "0.0.0.0:0")
		if err != nil {
			return nil, err
		}
		return standin.StartTLS(turns, record, l, cert)
	})
	// httptest names the listener's address (0.0.0.0): the certificate's
	// is the one a sandbox's gateway reaches.
	u, err := url.Parse(ts.Getenv("STANDIN_URL"))
	ts.Check(err)
	u.Host = net.JoinHostPort(host, u.Port())
	ts.Setenv("STANDIN_URL", u.String())
	ts.Setenv("STANDIN_HOST", u.Host)
}

func cmdStandinKeys(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: standin-keys")
	}
	v, ok := standins.Load(ts)
	if !ok {
		ts.Fatalf("standin-keys: no standin started")
	}
	keys, err := standin.Keys(v.(*standinRun).record)
	ts.Check(err)
	for _, k := range keys {
		fmt.Fprintln(ts.Stdout(), k)
	}
}

// scriptTests are the scripts' tests, by work directory (setupScript): a
// deferred command looks there whether its script failed.
var scriptTests sync.Map

// cmdGatewayEvidence is the script command gateway-evidence
// (scriptcmds_test.go): when the script fails, it logs what the gateway of
// sandbox NAME saw (litterbox net log NAME) and the gateway's own log.
func cmdGatewayEvidence(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gateway-evidence NAME")
	}
	t, ok := scriptTests.Load(ts.Getenv("WORK"))
	if !ok {
		ts.Fatalf("gateway-evidence: the script's test is unknown")
	}
	name, dir := args[0], ts.MkAbs(".")
	ts.Defer(func() {
		if !t.(interface{ Failed() bool }).Failed() {
			return
		}
		cmd := func(args ...string) *exec.Cmd {
			c := exec.Command(args[0], args[1:]...)
			c.Dir, c.Env = dir, scriptEnv(ts)
			return c
		}
		out, err := cmd("litterbox", "net", "log", name).CombinedOutput()
		ts.Logf("gateway-evidence: litterbox net log %s (%v):\n%s", name, err, out)
		out, _ = cmd("docker", "ps", "-a", "--filter", "label="+ts.Getenv("LITTERBOX_LABELS"), "--format", "{{.Names}}").Output()
		for _, c := range strings.Fields(string(out)) {
			if strings.HasSuffix(c, "-gw") {
				out, err := cmd("docker", "logs", "--tail", "200", c).CombinedOutput()
				ts.Logf("gateway-evidence: the log of gateway %s (%v):\n%s", c, err, out)
			}
		}
	})
}
