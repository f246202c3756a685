package docker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// dockerJSON is the docker CLI's template function json: encoding/json
// without HTML escaping. decoded is what a reader gets back from it (invalid
// UTF-8 becomes U+FFFD on docker's side already).
func dockerJSON(v any) (text string, decoded string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	text = strings.TrimSpace(buf.String())
	_ = json.Unmarshal([]byte(text), &decoded)
	return text, decoded
}

// FuzzParsePS renders one `docker ps` row the way the docker CLI does for
// PSArgs' template, with fuzzed values and a creation time in a fuzzed time
// zone (the CLI prints it in its own local zone), and checks ParsePS gives
// every value back.
func FuzzParsePS(f *testing.F) {
	// Values from real rows (docker 28 CLI, engine 20.10), among them one
	// printed with TZ=Asia/Kathmandu: "2026-11-23 17:21:00 +0545 +0545".
	f.Add("81c6867d0c7588dcd0182bf08b60bcf1a671a70971b470521fe57013628c6d23", "lbt-tooling-seed", "running",
		"127.0.0.1:32813->3000/tcp, 127.0.0.1:32812->8080/tcp", "", `/tmp/a,b "q" repo`, int64(1795433760), int16(345))
	f.Add("c372482aee9ce836646cf7b346f6a9cc3ee25afa14a4edf3f4bedb23a3831cef", "lbt-cap3", "exited", "", "cap3", "", int64(1795474931), int16(0))
	f.Add("77d5bf60", "lbt-cap2", "paused", "", "cap", "/home/me/日本\n\t<x>&", int64(0), int16(-180))
	f.Fuzz(func(t *testing.T, id, name, state, ports, slug, repo string, unix int64, zoneMinutes int16) {
		// Four-digit years, and zones within a day, as time.Format prints them.
		unix = min(max(unix, 0), 253402300799-86400)
		zone := time.FixedZone("", int(zoneMinutes)%(24*60)*60)
		created := time.Unix(unix, 0)
		var line strings.Builder
		field := func(k string, v string) string {
			text, _ := dockerJSON(v)
			return fmt.Sprintf("%q:%s", k, text)
		}
		fmt.Fprintf(&line, "{%s,%s,%s,%s,%s,\"labels\":{%s,%s}}\n",
			field("id", id), field("name", name), field("state", state), field("created", created.In(zone).String()),
			field("ports", ports), field("dev.litterbox.slug", slug), field("dev.litterbox.repo", repo))
		if line.Len() >= 1<<20 {
			t.Skip("longer than a docker ps line ParsePS accepts")
		}
		list, err := ParsePS([]byte(line.String()))
		if err != nil || len(list) != 1 {
			t.Fatalf("ParsePS(%q) = %v, %v; want one container", line.String(), list, err)
		}
		c := list[0]
		for _, v := range []struct{ what, got, sent string }{
			{"id", c.ID, id}, {"name", c.Name, name}, {"state", c.State, state}, {"ports", c.Ports, ports},
		} {
			if _, want := dockerJSON(v.sent); v.got != want {
				t.Errorf("%s = %q, want %q", v.what, v.got, want)
			}
		}
		if !c.Created.Equal(created) {
			t.Errorf("created = %v, want %v (docker printed %q)", c.Created, created, created.In(zone).String())
		}
		for k, v := range map[string]string{"dev.litterbox.slug": slug, "dev.litterbox.repo": repo} {
			_, want := dockerJSON(v)
			got, ok := c.Labels[k]
			if want == "" && ok || want != "" && got != want {
				t.Errorf("label %s = %q (present %v), want %q; an empty label is absent", k, got, ok, want)
			}
		}
	})
}

// FuzzParsePublishedPorts renders the output of InspectPortsArgs' template
// for a fuzzed label value (printed raw by docker's index) and fuzzed
// bindings, and checks ParsePublishedPorts gives them back.
func FuzzParsePublishedPorts(f *testing.F) {
	// From real containers: published ports, and one exposed only.
	f.Add("web=8080,api=3000", uint16(8080), uint8(0), "127.0.0.1", uint16(32812), uint16(3000), uint16(32813), uint16(0))
	f.Add("", uint16(8080), uint8(0), "127.0.0.1", uint16(32814), uint16(0), uint16(0), uint16(9000))
	f.Add("a\tb", uint16(53), uint8(1), "", uint16(1), uint16(0), uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, label string, port1 uint16, proto uint8, ip string, host1, port2, host2, exposed uint16) {
		protos := []string{"tcp", "udp", "sctp"}
		p := protos[int(proto)%len(protos)]
		type hostPort struct {
			HostIP   string `json:"HostIp"`
			HostPort string `json:"HostPort"`
		}
		_, ipDecoded := dockerJSON(ip)
		m := map[string]any{} // "port/proto": []hostPort, or nil when only exposed
		var want []Binding
		for _, b := range []struct{ port, host uint16 }{{port1, host1}, {port2, host2}} {
			if b.port == 0 {
				continue
			}
			key := fmt.Sprintf("%d/%s", b.port, p)
			list, _ := m[key].([]hostPort)
			m[key] = append(list, hostPort{ip, fmt.Sprint(b.host)})
			want = append(want, Binding{ContainerPort: int(b.port), Proto: p, HostIP: ipDecoded, HostPort: int(b.host)})
		}
		if key := fmt.Sprintf("%d/%s", exposed, p); exposed != 0 && m[key] == nil {
			m[key] = nil
		}
		ports, _ := dockerJSON(m)
		out := label + "\t" + ports + "\n"
		gotLabel, got, err := ParsePublishedPorts([]byte(out))
		if err != nil {
			t.Fatalf("ParsePublishedPorts(%q): %v", out, err)
		}
		wantLabel := label
		if label == "<no value>" {
			wantLabel = "" // how older engines print a missing label
		}
		if gotLabel != wantLabel {
			t.Errorf("label = %q, want %q", gotLabel, wantLabel)
		}
		order := func(a, b Binding) int {
			return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
		}
		slices.SortFunc(got, order)
		slices.SortFunc(want, order)
		if !slices.Equal(got, want) {
			t.Errorf("bindings = %+v, want %+v (output %q)", got, want, out)
		}
	})
}
