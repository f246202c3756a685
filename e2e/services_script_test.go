package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// cmdHTTPGet is the script command httpget (scriptcmds_test.go).
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: httpget URL")
	}
	wait := 15 * time.Second
	if neg {
		wait = 2 * time.Second
	}
	body, err := httpGet(args[0], wait)
	if neg {
		if err == nil {
			ts.Fatalf("httpget %s: got an answer, want none", args[0])
		}
		return
	}
	if err != nil {
		ts.Fatalf("httpget %s: %v", args[0], err)
	}
	fmt.Fprint(ts.Stdout(), body)
}

func httpGet(url string, wait time.Duration) (string, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(wait)
	var last error
	for {
		resp, err := client.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode/100 == 2 {
				return string(b), nil
			}
			err = fmt.Errorf("status %s: %s", resp.Status, b)
			if rerr != nil {
				err = rerr
			}
		}
		last = err
		if time.Now().After(deadline) {
			return "", last
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdPortURL is the script command porturl (scriptcmds_test.go).
func cmdPortURL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: porturl VAR PORTNAME")
	}
	var res api.PortsResult
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &res))
	for _, p := range res.Ports {
		if p.Name == args[1] {
			if p.URL == "" {
				ts.Fatalf("port %s is not published", args[1])
			}
			ts.Setenv(args[0], p.URL)
			return
		}
	}
	ts.Fatalf("no port %q in %+v", args[1], res.Ports)
}

// cmdFanout is the script command fanout (scriptcmds_test.go).
func cmdFanout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: fanout N CMD ARGS...")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	env := scriptEnv(ts)
	sem := make(chan struct{}, 6)
	errs := make([]string, n)
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		argv := make([]string, len(args)-1)
		for j, a := range args[1:] {
			argv[j] = strings.ReplaceAll(a, "%d", strconv.Itoa(i))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir = ts.MkAbs(".")
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i-1] = fmt.Sprintf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			}
		}()
	}
	wg.Wait()
	var failed []string
	for _, e := range errs {
		if e != "" {
			failed = append(failed, e)
		}
	}
	if len(failed) > 0 {
		ts.Fatalf("%d of %d failed:\n%s", len(failed), n, strings.Join(failed, "\n"))
	}
}

// cmdDistinctPorts is the script command distinctports (scriptcmds_test.go).
func cmdDistinctPorts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: distinctports N NAMEFMT PORTNAME")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	seen := map[string]string{}
	for i := 1; i <= n; i++ {
		name := strings.ReplaceAll(args[1], "%d", strconv.Itoa(i))
		cmd := exec.Command("litterbox", "ports", name, "--json")
		cmd.Dir = ts.MkAbs(".")
		cmd.Env = scriptEnv(ts)
		out, err := cmd.Output()
		if err != nil {
			ts.Fatalf("litterbox ports %s: %v", name, err)
		}
		var res api.PortsResult
		ts.Check(json.Unmarshal(out, &res))
		url := ""
		for _, p := range res.Ports {
			if p.Name == args[2] {
				url = p.URL
			}
		}
		if url == "" {
			ts.Fatalf("%s: no host URL for port %s in %s", name, args[2], out)
		}
		if other, ok := seen[url]; ok {
			ts.Fatalf("%s and %s share %s", name, other, url)
		}
		seen[url] = name
		body, err := httpGet(url, 15*time.Second)
		if err != nil {
			ts.Fatalf("%s: GET %s: %v", name, url, err)
		}
		if !strings.Contains(body, name) {
			ts.Fatalf("%s: GET %s answered %q, not its own content", name, url, body)
		}
	}
	fmt.Fprintf(ts.Stdout(), "%d sandboxes, %d distinct host ports, each answering its own content\n", n, len(seen))
}
