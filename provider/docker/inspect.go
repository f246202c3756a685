package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/litterbox-dev/litterbox/provider"
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
	res, err := c.Run(ctx, c.Cmd(InspectPortsArgs(container, label)...))
	if err != nil {
		return "", nil, err
	}
	return ParsePublishedPorts(res.Stdout)
}

// ParsePublishedPorts parses the output of InspectPortsArgs. Ports exposed
// but not published (no bindings) are left out.
func ParsePublishedPorts(out []byte) (labelValue string, ports []Binding, err error) {
	// The label is printed raw and may hold a tab; the JSON never does.
	s := strings.TrimRight(string(out), "\r\n")
	i := strings.LastIndexByte(s, '\t')
	if i < 0 {
		return "", nil, fmt.Errorf("unexpected docker inspect output %q", out)
	}
	label, js := s[:i], s[i+1:]
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

// ImageInspectArgs builds the argv of the docker image inspect that Image
// runs: the id, the platform, the declared volumes and the labels, as one
// JSON object.
func ImageInspectArgs(name string) []string {
	return []string{"image", "inspect", "--format",
		`{"id":{{json .Id}},"os":{{json .Os}},"arch":{{json .Architecture}},"volumes":{{json .Config.Volumes}},"labels":{{json .Config.Labels}}}`, "--", name}
}

// ParseImageInspect parses the output of ImageInspectArgs.
func ParseImageInspect(out []byte) (provider.Image, error) {
	var v struct {
		ID, OS, Arch string
		Volumes      map[string]json.RawMessage
		Labels       map[string]string
	}
	var img provider.Image
	if err := json.Unmarshal(out, &v); err != nil || v.ID == "" {
		return img, fmt.Errorf("unexpected docker image inspect output %q (%v)", out, err)
	}
	img = provider.Image{ID: v.ID, OS: v.OS, Arch: v.Arch, Labels: v.Labels}
	for p := range v.Volumes {
		img.Volumes = append(img.Volumes, p)
	}
	sort.Strings(img.Volumes)
	return img, nil
}
