package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// servicesConfig is the .litterbox.toml of the services cases: two
// named ports and busybox httpd as a service on the first.
const servicesConfig = `[ports]
web = 8080
admin = 8081

[services.web]
command = ["httpd", "-f", "-p", "8080", "-h", "/src"]
signals = { stop = "SIGTERM", restart = "SIGHUP" }
`

var serviceCases = []string{"create with 2 named ports", "service start to first HTTP answer"}

// caseServices times create with two named ports against create without, and
// a service's start until the host gets its first HTTP answer.
func (b *bench) caseServices(ctx context.Context) error {
	if !b.has(ctx, "ports") || !b.has(ctx, "service") {
		b.skip(serviceCases, "not implemented yet: `litterbox ports`/`litterbox service` absent")
		return nil
	}
	plain, err := b.repo(ctx, b.small)
	if err != nil {
		return err
	}
	// The same small repository plus the config, in its own directory.
	ported := filepath.Join(b.tmp, "repo-ports")
	if _, err := os.Stat(ported); err != nil {
		if err := makeRepo(ctx, ported, b.small); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ported, ".litterbox.toml"), []byte(servicesConfig), 0o644); err != nil {
			return err
		}
		if err := gitIn(ctx, ported, "add", ".litterbox.toml"); err != nil {
			return err
		}
		if err := gitIn(ctx, ported, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", "ports"); err != nil {
			return err
		}
	}

	var with, without []time.Duration
	for i := 0; i <= b.n; i++ {
		for _, c := range []struct {
			dir  string
			into *[]time.Duration
		}{{ported, &with}, {plain, &without}} {
			name := fmt.Sprintf("p%d", i)
			d, err := timed(func() error { _, err := b.litterbox(c.dir, "create", name).run(ctx); return err })
			if err != nil {
				return err
			}
			if _, err := b.litterbox(c.dir, "delete", "--force", name).run(ctx); err != nil {
				return err
			}
			if i > 0 {
				*c.into = append(*c.into, d)
			}
		}
	}
	b.rows = append(b.rows, withNote(row(serviceCases[0], with, without, maxOverhead(50)), "floor = create without ports"))

	r, err := b.serviceStart(ctx, ported)
	if err != nil {
		return err
	}
	b.rows = append(b.rows, r)
	return nil
}

// serviceStart times `litterbox service NAME web start` until the host gets
// an HTTP answer through the named port, against starting httpd with a bare
// `docker exec -d` and polling the same way.
func (b *bench) serviceStart(ctx context.Context, dir string) (Row, error) {
	r, err := b.svc.OpenRepo(ctx, dir)
	if err != nil {
		return Row{}, err
	}
	const name = "svc"
	if _, err := b.litterbox(dir, "create", name).run(ctx); err != nil {
		return Row{}, err
	}
	defer b.litterbox(dir, "delete", "--force", name).run(context.WithoutCancel(ctx))
	c := r.ContainerName(name)
	// Where the host reaches the port, as a user finds it: a confined
	// sandbox's ports are published by its gateway, not its container.
	out, err := b.litterbox(dir, "ports", "--json", name).run(ctx)
	if err != nil {
		return Row{}, fmt.Errorf("find the host port of web: %w", err)
	}
	var ports struct {
		Ports []struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"ports"`
	}
	if err := json.Unmarshal(out, &ports); err != nil {
		return Row{}, fmt.Errorf("find the host port of web: %w", err)
	}
	url := ""
	for _, p := range ports.Ports {
		if p.Name == "web" {
			url = p.URL + "/README.md"
		}
	}
	if url == "" {
		return Row{}, fmt.Errorf("find the host port of web: litterbox ports says %s", out)
	}

	var svc, floor []time.Duration
	for i := 0; i <= b.n; i++ {
		d, err := timed(func() error {
			if _, err := b.litterbox(dir, "service", name, "web", "start").run(ctx); err != nil {
				return err
			}
			return waitHTTP(ctx, url)
		})
		if err != nil {
			return Row{}, err
		}
		if _, err := b.litterbox(dir, "service", name, "web", "stop").run(ctx); err != nil {
			return Row{}, err
		}
		if err := waitDown(ctx, url); err != nil {
			return Row{}, err
		}
		f, err := timed(func() error {
			if err := runCmd(ctx, "docker", "exec", "-d", c, "httpd", "-f", "-p", "8080", "-h", "/src"); err != nil {
				return err
			}
			return waitHTTP(ctx, url)
		})
		if err != nil {
			return Row{}, err
		}
		// This busybox (Debian's busybox-static) has killall but no pkill.
		if err := runCmd(ctx, "docker", "exec", c, "killall", "httpd"); err != nil {
			return Row{}, err
		}
		if err := waitDown(ctx, url); err != nil {
			return Row{}, err
		}
		if i > 0 {
			svc, floor = append(svc, d), append(floor, f)
		}
	}
	return withNote(row(serviceCases[1], svc, floor, info), "floor = docker exec -d httpd"), nil
}

var httpClient = &http.Client{Timeout: time.Second}

// waitHTTP polls url until it answers 200, for up to 10 s.
func waitHTTP(ctx context.Context, url string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := httpClient.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("no HTTP answer from %s: %v", url, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitDown polls url until it stops answering, for up to 10 s.
func waitDown(ctx context.Context, url string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := httpClient.Get(url)
		if err != nil {
			return nil
		}
		resp.Body.Close()
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s still answers", url)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
