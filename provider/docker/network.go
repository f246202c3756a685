package docker

import (
	"context"
	"encoding/json"
	"fmt"
)

// Network is one row of `docker network ls`.
type Network struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"-"`
}

// NetworkLSArgs builds the argv of `docker network ls` for networks carrying
// every filter label (key or key=value), reporting the given label keys one by
// one, as PSArgs does, so a value holding a comma survives.
func NetworkLSArgs(filters, labelKeys []string) []string {
	args := []string{"network", "ls", "--no-trunc"}
	for _, f := range filters {
		args = append(args, "--filter", "label="+f)
	}
	return append(args, "--format", `{"id":{{json .ID}},"name":{{json .Name}},"labels":`+labelsFormat(labelKeys)+"}")
}

// NetworkList lists the networks carrying every filter label.
func (c *Client) NetworkList(ctx context.Context, filters, labelKeys []string) ([]Network, error) {
	res, err := c.Run(ctx, c.Cmd(NetworkLSArgs(filters, labelKeys)...))
	if err != nil {
		return nil, err
	}
	return ParseNetworks(res.Stdout)
}

// ParseNetworks parses the output of NetworkLSArgs.
func ParseNetworks(out []byte) ([]Network, error) {
	var list []Network
	err := parseLines(out, func(line []byte) error {
		var row struct {
			Network
			Labels map[string]string `json:"labels"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			return fmt.Errorf("parse docker network ls line %q: %w", line, err)
		}
		n := row.Network
		n.Labels = setLabels(row.Labels)
		list = append(list, n)
		return nil
	})
	return list, err
}
