package gateway

import (
	"encoding/binary"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// query builds a DNS query for name and type.
func query(id uint16, name string, typ uint16) []byte {
	m := make([]byte, 12)
	binary.BigEndian.PutUint16(m, id)
	binary.BigEndian.PutUint16(m[2:], 0x0100) // RD
	binary.BigEndian.PutUint16(m[4:], 1)
	for _, l := range strings.Split(name, ".") {
		m = append(m, byte(len(l)))
		m = append(m, l...)
	}
	m = append(m, 0, byte(typ>>8), byte(typ), 0, 1)
	return m
}

// TestDNSRefusesAndRecords: every query is answered REFUSED, with its ID and
// question, and recorded; a message that is no query gets no answer.
func TestDNSRefusesAndRecords(t *testing.T) {
	g := &Gateway{Audit: NewAudit(16, nil)}
	dir := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(dir, control.DNSSocket))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go g.ServeDNS(l)
	q := query(0xbeef, "secret-data.exfil.example", 16)
	ans, err := exchangeStream(filepath.Join(dir, control.DNSSocket), q)
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint16(ans) != 0xbeef || ans[3]&0x0f != 5 || ans[2]&0x80 == 0 || ans[2]&0x01 == 0 {
		t.Errorf("answer header % x", ans[:12])
	}
	if n := binary.BigEndian.Uint16(ans[6:]); n != 0 {
		t.Errorf("%d answers", n)
	}
	if string(ans[12:]) != string(q[12:]) {
		t.Errorf("question not echoed")
	}
	resp := append([]byte(nil), q...)
	resp[2] |= 0x80
	if _, err := exchangeStream(filepath.Join(dir, control.DNSSocket), resp); err == nil {
		t.Error("a response was answered")
	}
	b := g.Audit.Since("", 0, 10)
	if len(b.Records) != 2 {
		t.Fatalf("records: %+v", b.Records)
	}
	r := b.Records[0]
	if r.Kind != "dns" || r.Host != "secret-data.exfil.example" || r.Method != "TXT" || r.Allowed || !strings.Contains(r.Reason, "resolves no names") {
		t.Errorf("record %+v", r)
	}
	if !strings.Contains(b.Records[1].Reason, "malformed") {
		t.Errorf("record %+v", b.Records[1])
	}
}

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery(query(7, "a.example", 1))
	if err != nil || q.Name != "a.example" || q.Type != 1 || q.ID != 7 {
		t.Errorf("%+v, %v", q, err)
	}
	bad := map[string][]byte{
		"short":      {1, 2, 3},
		"two qs":     func() []byte { m := query(1, "a.b", 1); m[5] = 2; return m }(),
		"compressed": append(query(1, "a", 1)[:12], 0xc0, 12, 0, 1, 0, 1),
		"truncated":  query(1, "a.example", 1)[:20],
		"no type":    query(1, "a.example", 1)[:23],
	}
	for name, m := range bad {
		if _, err := ParseQuery(m); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	if got := printableName("a\x00b\\.c\xff"); got != `a\000b\092.c\255` {
		t.Errorf("printableName = %q", got)
	}
}

// FuzzParseQuery: no message makes it panic, and what it answers keeps the
// query's ID and question.
func FuzzParseQuery(f *testing.F) {
	f.Add(query(1, "a.example", 1))
	f.Add(query(2, "x", 255))
	f.Fuzz(func(t *testing.T, m []byte) {
		q, err := ParseQuery(m)
		if err != nil {
			return
		}
		a := Refusal(m, q)
		if len(a) < 12 || a[0] != m[0] || a[1] != m[1] || a[3]&0x0f != 5 || string(a[12:]) != string(m[12:q.end]) {
			t.Fatalf("answer % x to % x", a, m)
		}
		if strings.ContainsAny(printableName(q.Name), "\x00\n\r ") {
			t.Fatalf("printable name %q", printableName(q.Name))
		}
	})
}

// A gateway linked to its sandbox by network (serve -listen -dns) answers
// queries over UDP: REFUSED, and recorded, as over a stream.
func TestDNSPacketsRefuseAndRecord(t *testing.T) {
	g := &Gateway{Audit: NewAudit(16, nil)}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go g.ServeDNSPackets(pc)
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q := query(0xcafe, "a.example", 1)
	if _, err := c.Write(q); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	ans := make([]byte, 512)
	n, err := c.Read(ans)
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint16(ans) != 0xcafe || ans[3]&0x0f != 5 || string(ans[12:n]) != string(q[12:]) {
		t.Errorf("answer % x", ans[:n])
	}
	if b := g.Audit.Since("", 0, 10); len(b.Records) != 1 || b.Records[0].Host != "a.example" || b.Records[0].Kind != "dns" {
		t.Errorf("records: %+v", b.Records)
	}
}
