package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Container is one row of `docker ps`.
type Container struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	State   string            `json:"state"` // created, running, paused, restarting, removing, exited, dead
	Created time.Time         `json:"-"`
	Ports   string            `json:"ports"`
	Labels  map[string]string `json:"-"`
}

// psFormat prints one JSON object per container. Labels are asked for one by
// one with .Label, because the .Labels field is a "k=v,k=v" string that
// cannot be split safely when a value (a repository path) holds a comma.
func psFormat(labelKeys []string) string {
	var b strings.Builder
	b.WriteString(`{"id":{{json .ID}},"name":{{json .Names}},"state":{{json .State}},"created":{{json .CreatedAt}},"ports":{{json .Ports}},"labels":{`)
	for i, k := range labelKeys {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `%q:{{json (.Label %q)}}`, k, k)
	}
	b.WriteString("}}")
	return b.String()
}

// PSArgs builds the argv of `docker ps` for containers carrying every filter
// label (key or key=value), reporting the given label keys.
func PSArgs(filters, labelKeys []string) []string {
	args := []string{"ps", "--all", "--no-trunc"}
	for _, f := range filters {
		args = append(args, "--filter", "label="+f)
	}
	return append(args, "--format", psFormat(labelKeys))
}

// PS lists containers, running or not, that carry every filter label.
func (c *Client) PS(ctx context.Context, filters, labelKeys []string) ([]Container, error) {
	res, err := c.Run(ctx, Cmd(PSArgs(filters, labelKeys)...))
	if err != nil {
		return nil, err
	}
	return ParsePS(res.Stdout)
}

// ParsePS parses the output of PSArgs.
func ParsePS(out []byte) ([]Container, error) {
	var list []Container
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var row struct {
			Container
			CreatedAt string            `json:"created"`
			Labels    map[string]string `json:"labels"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, fmt.Errorf("parse docker ps line %q: %w", line, err)
		}
		ct := row.Container
		ct.Labels = map[string]string{}
		for k, v := range row.Labels {
			if v != "" {
				ct.Labels[k] = v
			}
		}
		// Docker prints "2026-11-21 22:55:27 +0000 UTC".
		if t, err := time.Parse("2006-01-02 15:04:05 -0700 MST", row.CreatedAt); err == nil {
			ct.Created = t
		}
		list = append(list, ct)
	}
	return list, sc.Err()
}
