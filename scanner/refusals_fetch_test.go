package scanner

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// TestFetchRefusals: a run linked to its gateway by network asks the
// gateway's proxy (RefusalsVia), itself, for the refusals URL's mark before
// the command and for the refusals after that mark once it ended, and
// holds the whole lines of a 200, and the mark for the host; a redirect,
// an answer past wire.MaxRefusals, and a proxy that never answers read
// nothing, the last within fetchTimeout.
func TestFetchRefusals(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	const line = `{"kind":"connect","host":"evil.example","port":443,"allowed":false,"reason":"not in the allowlist"}` + "\n"
	ok := func(body string) string {
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	}
	serve := func(answer string) (via string, asked chan string) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		asked = make(chan string, 1)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				req, err := http.ReadRequest(bufio.NewReader(c))
				switch {
				case err != nil:
					asked <- err.Error()
				case req.URL.Path == "/mark":
					fmt.Fprint(c, ok(`{"boot":"b1","after":7}`+"\n"))
				case answer != "":
					asked <- req.RequestURI
					fmt.Fprint(c, answer)
				default:
					asked <- req.RequestURI
					time.Sleep(3 * fetchTimeout)
				}
				c.Close()
			}
		}()
		return l.Addr().String(), asked
	}
	run := func(answer string) (*wire.RunResult, string, time.Duration) {
		via, asked := serve(answer)
		spec := &wire.RunSpec{Refusals: "http://refused.litterbox.invalid/", RefusalsVia: via}
		m := markRefusals(spec)
		res := &wire.RunResult{}
		start := time.Now()
		readRefusals(spec, m, res)
		took := time.Since(start)
		select {
		case uri := <-asked:
			return res, uri, took
		case <-time.After(5 * time.Second):
			t.Fatal("the proxy was not asked")
		}
		return nil, "", 0
	}

	res, uri, _ := run(ok(line + `{"kind":"connect","host":"half`))
	if uri != "http://refused.litterbox.invalid/?after=7&boot=b1" {
		t.Errorf("the proxy was asked %q, want the refusals URL with the mark it gave", uri)
	}
	if !res.RefusalsRead || res.Refusals != line {
		t.Errorf("a 200 read %v %q, want its whole line %q", res.RefusalsRead, res.Refusals, line)
	}
	if res.RefusalsBoot != "b1" || res.RefusalsAfter != 7 {
		t.Errorf("the run's mark for the host is %q %d, want b1 7", res.RefusalsBoot, res.RefusalsAfter)
	}
	for name, answer := range map[string]string{
		"a redirect":     "HTTP/1.1 302 Found\r\nLocation: http://elsewhere.example/\r\nContent-Length: 0\r\n\r\n",
		"an answer past": fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", wire.MaxRefusals+1, strings.Repeat(line, 10)),
		"no length":      "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + line,
	} {
		if res, _, _ := run(answer); res.RefusalsRead || res.Refusals != "" {
			t.Errorf("%s was read: %q", name, res.Refusals)
		}
	}
	res, _, took := run("")
	if res.RefusalsRead || took > fetchTimeout+time.Second {
		t.Errorf("a proxy that never answered: read %v after %s", res.RefusalsRead, took)
	}
}
