package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Binding is one published port of a container: its container port and
// protocol, and the host address and port docker bound it to.
type Binding struct {
	ContainerPort int
	Proto         string
	HostIP        string
	HostPort      int
}

// portsFormat prints the value of one label, a tab, and the published ports
// as JSON ({"8080/tcp":[{"HostIp":"127.0.0.1","HostPort":"49153"}]}).
func portsFormat(label string) string {
	return fmt.Sprintf(`{{index .Config.Labels %q}}{{"\t"}}{{json .NetworkSettings.Ports}}`, label)
}

// InspectPortsArgs builds the argv of the docker inspect that PublishedPorts
// runs.
func InspectPortsArgs(container, label string) []string {
	return []string{"inspect", "--type", "container", "--format", portsFormat(label), container}
}

// PublishedPorts returns a container's published ports and the value of one
// of its labels, with one docker inspect.
func (c *Client) PublishedPorts(ctx context.Context, container, label string) (labelValue string, ports []Binding, err error) {
	res, err := c.Run(ctx, Cmd(InspectPortsArgs(container, label)...))
	if err != nil {
		return "", nil, err
	}
	return ParsePublishedPorts(res.Stdout)
}

// ParsePublishedPorts parses the output of InspectPortsArgs. Ports exposed
// but not published (no bindings) are left out.
func ParsePublishedPorts(out []byte) (labelValue string, ports []Binding, err error) {
	label, js, ok := strings.Cut(strings.TrimRight(string(out), "\r\n"), "\t")
	if !ok {
		return "", nil, fmt.Errorf("unexpected docker inspect output %q", out)
	}
	if label == "<no value>" {
		label = ""
	}
	var m map[string][]struct {
		HostIP   string `json:"HostIp"`
		HostPort string `json:"HostPort"`
	}
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		return "", nil, fmt.Errorf("parse docker inspect ports %q: %w", js, err)
	}
	for key, bs := range m {
		portStr, proto, _ := strings.Cut(key, "/")
		cport, err := strconv.Atoi(portStr)
		if err != nil {
			return "", nil, fmt.Errorf("parse docker inspect port %q: %w", key, err)
		}
		for _, b := range bs {
			hp, err := strconv.Atoi(b.HostPort)
			if err != nil {
				return "", nil, fmt.Errorf("parse docker inspect host port %q: %w", b.HostPort, err)
			}
			ports = append(ports, Binding{ContainerPort: cport, Proto: proto, HostIP: b.HostIP, HostPort: hp})
		}
	}
	return label, ports, nil
}
