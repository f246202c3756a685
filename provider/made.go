package provider

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Made records what a Create has made so far, so that a step that fails
// removes it all, newest first. Each entry removes one thing and names it.
type Made []func(context.Context) (what string, err error)

// Add records how to remove one more thing.
func (m *Made) Add(remove func(context.Context) (string, error)) { *m = append(*m, remove) }

// Undo removes what was made, newest first, with ctx (which should not be
// cancelled: an engine finishes what it was asked to make), and returns
// cause, with ErrLeftBehind and their names when some could not be removed.
func (m Made) Undo(ctx context.Context, cause error) error {
	var left []string
	for i := len(m) - 1; i >= 0; i-- {
		if what, err := m[i](ctx); err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", what, err))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w\nit could not remove what it made: %s: %w", cause, strings.Join(left, ", "), ErrLeftBehind)
	}
	return cause
}

// LabelPorts is the label (an annotation on Kubernetes) that records a
// sandbox's named ports, PortsLabel's value, so Ports can name them without
// the spec. Its key predates the provider package: containers made earlier
// carry it too.
const LabelPorts = "dev.litterbox.ports"

// PortsLabel renders named ports as one label value ("api=9000,web=8080"),
// sorted by name: how providers record a sandbox's named ports on it.
func PortsLabel(ports []PortSpec) string {
	items := make([]string, 0, len(ports))
	for _, p := range ports {
		items = append(items, fmt.Sprintf("%s=%d", p.Name, p.Port))
	}
	sort.Strings(items)
	return strings.Join(items, ",")
}

// ParsePortsLabel parses a PortsLabel value, sorted by name. Malformed
// items are skipped: the label is litterbox's, but the object carrying it is
// only an engine's.
func ParsePortsLabel(label string) []PortSpec {
	var ports []PortSpec
	for _, item := range strings.Split(label, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(item), "=")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || name == "" {
			continue
		}
		ports = append(ports, PortSpec{Name: name, Port: n})
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i].Name < ports[j].Name })
	return ports
}
