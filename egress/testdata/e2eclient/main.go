// Command e2eclient is the client the egress tests run inside a sandbox: Go's
// own HTTP client and TLS, a real one, built static and copied in. Each
// command prints one JSON line: {"status":..., "body":..., "error":...}.
//
//	e2eclient get URL [-ca FILE] [-noproxy] [-sni NAME] [-n N]   an HTTP(S) request (through $HTTPS_PROXY/$HTTP_PROXY unless -noproxy);
//	                                                  with -n, N of them one after another, each on a new connection: seconds is their median
//	e2eclient download URL [-ca FILE]                     the whole body, discarded: bytes and seconds
//	e2eclient tcp HOST:PORT                               a direct TCP connection
//	e2eclient udp HOST:PORT                               a direct UDP datagram, waiting for an answer
//	e2eclient resolve NAME                                the system resolver (the sandbox's 127.0.0.1:53)
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
)

type result struct {
	Status  int     `json:"status,omitempty"`
	Body    string  `json:"body,omitempty"`
	Bytes   int64   `json:"bytes,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Error   string  `json:"error,omitempty"`
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: e2eclient get|download|tcp|udp|resolve TARGET [flags]")
		os.Exit(2)
	}
	cmd, target := os.Args[1], os.Args[2]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	ca := fs.String("ca", "", "a PEM file of the CA to trust")
	noProxy := fs.Bool("noproxy", false, "ignore the proxy variables")
	sni := fs.String("sni", "", "the TLS server name to send instead of the URL's host")
	timeout := fs.Duration("timeout", 20*time.Second, "give up after")
	n := fs.Int("n", 1, "get: requests to make, each on a new connection")
	_ = fs.Parse(os.Args[3:])
	var r result
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	switch cmd {
	case "get", "download":
		tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{ServerName: *sni}, DisableCompression: true, DisableKeepAlives: *n > 1}
		if *noProxy {
			tr.Proxy = nil
		}
		if *ca != "" {
			pem, err := os.ReadFile(*ca)
			if err != nil {
				r.Error = err.Error()
				break
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pem)
			tr.TLSClientConfig.RootCAs = pool
		}
		var times []float64
		var resp *http.Response
		var err error
		for i := 0; i < *n; i++ {
			t0 := time.Now()
			req, _ := http.NewRequestWithContext(ctx, "GET", target, nil)
			if resp, err = (&http.Client{Transport: tr}).Do(req); err != nil {
				break
			}
			if i < *n-1 {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			times = append(times, time.Since(t0).Seconds())
		}
		if err != nil {
			r.Error = err.Error()
			break
		}
		if *n > 1 {
			sort.Float64s(times)
			r.Seconds = times[len(times)/2]
		}
		r.Status = resp.StatusCode
		if cmd == "download" {
			r.Bytes, err = io.Copy(io.Discard, resp.Body)
			r.Seconds = time.Since(start).Seconds()
		} else {
			var b []byte
			b, err = io.ReadAll(io.LimitReader(resp.Body, 4096))
			r.Body = strings.TrimSpace(string(b))
		}
		resp.Body.Close()
		if err != nil {
			r.Error = err.Error()
		}
	case "tcp":
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
		if err != nil {
			r.Error = err.Error()
			break
		}
		c.Close()
	case "udp":
		c, err := (&net.Dialer{}).DialContext(ctx, "udp", target)
		if err != nil {
			r.Error = err.Error()
			break
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write([]byte("exfiltrated bytes")); err != nil {
			r.Error = err.Error()
			break
		}
		if _, err := c.Read(make([]byte, 512)); err != nil {
			r.Error = err.Error()
		}
		c.Close()
	case "resolve":
		addrs, err := net.DefaultResolver.LookupHost(ctx, target)
		if err != nil {
			r.Error = err.Error()
		}
		r.Body = strings.Join(addrs, " ")
	default:
		r.Error = "unknown command " + cmd
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
}
