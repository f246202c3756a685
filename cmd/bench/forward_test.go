package main

import (
	"io"
	"net"
	"strings"
	"testing"
)

// The forwarder's arguments are LISTEN=DEST pairs of host:port; anything
// else is refused before it listens.
func TestParseForwards(t *testing.T) {
	got, err := parseForwards([]string{"127.0.0.1:18443=198.18.7.10:443", ":18080=198.18.7.10:80"})
	if err != nil || len(got) != 2 || got[0] != [2]string{"127.0.0.1:18443", "198.18.7.10:443"} || got[1] != [2]string{":18080", "198.18.7.10:80"} {
		t.Fatalf("parseForwards = %v, %v", got, err)
	}
	for _, bad := range [][]string{nil, {"127.0.0.1:1"}, {"127.0.0.1=198.18.7.10:80"}, {"127.0.0.1:1=host"}} {
		if _, err := parseForwards(bad); err == nil {
			t.Errorf("parseForwards(%q) took it", bad)
		}
	}
}

// What the client sends reaches the server, and the server's answer comes
// back whole, after the client has closed its side.
func TestServeForward(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		c, err := srv.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, _ := io.ReadAll(c) // until the client's half-close
		_, _ = c.Write([]byte(strings.Repeat(string(req), 1000)))
	}()
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go serveForward(l, srv.Addr().String())
	c, err := net.DialTCP("tcp", nil, l.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping ")); err != nil {
		t.Fatal(err)
	}
	_ = c.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != strings.Repeat("ping ", 1000) {
		t.Fatalf("got %d bytes (%v), want %d", len(got), err, 5000)
	}
}
