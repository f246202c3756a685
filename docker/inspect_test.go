package docker

import (
	"reflect"
	"sort"
	"testing"
)

func TestParsePublishedPorts(t *testing.T) {
	// Captured from docker 20.10 for a container run with
	// --publish 127.0.0.1::8080 --publish 127.0.0.1::9090 and EXPOSE 7000.
	out := "web=8080,admin=9090\t{\"7000/tcp\":null,\"8080/tcp\":[{\"HostIp\":\"127.0.0.1\",\"HostPort\":\"32770\"}],\"9090/tcp\":[{\"HostIp\":\"127.0.0.1\",\"HostPort\":\"32769\"}]}\n"
	label, ports, err := ParsePublishedPorts([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i].ContainerPort < ports[j].ContainerPort })
	want := []Binding{{8080, "tcp", "127.0.0.1", 32770}, {9090, "tcp", "127.0.0.1", 32769}}
	if label != "web=8080,admin=9090" || !reflect.DeepEqual(ports, want) {
		t.Errorf("got %q %+v", label, ports)
	}

	// No label, nothing published.
	label, ports, err = ParsePublishedPorts([]byte("\t{}\n"))
	if err != nil || label != "" || len(ports) != 0 {
		t.Errorf("empty: %q %+v %v", label, ports, err)
	}
	if _, _, err := ParsePublishedPorts([]byte("garbage")); err == nil {
		t.Error("garbage accepted")
	}
}

func TestInspectPortsArgs(t *testing.T) {
	got := InspectPortsArgs("abc", "dev.litterbox.ports")
	want := []string{"inspect", "--type", "container", "--format", `{{index .Config.Labels "dev.litterbox.ports"}}{{"\t"}}{{json .NetworkSettings.Ports}}`, "abc"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}
