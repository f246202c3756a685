package docker

import (
	"reflect"
	"slices"
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

// What Image reads of an image: its platform, its volumes and its labels
// (captured from docker 28 for an image built FROM busybox with VOLUME and
// LABEL, and for busybox itself, whose Config has neither).
func TestParseImageInspect(t *testing.T) {
	img, err := ParseImageInspect([]byte(`{"id":"sha256:8fc2","os":"linux","arch":"amd64","volumes":{"/var/lib/x":{},"/data":{}},"labels":{"dev.litterbox.probe":"isolation","a b":"c d"}}` + "\n"))
	if err != nil || img.ID != "sha256:8fc2" || img.OS != "linux" || img.Arch != "amd64" ||
		!slices.Equal(img.Volumes, []string{"/data", "/var/lib/x"}) || img.Labels["a b"] != "c d" || img.Labels["dev.litterbox.probe"] != "isolation" {
		t.Errorf("ParseImageInspect = %+v, %v", img, err)
	}
	img, err = ParseImageInspect([]byte(`{"id":"sha256:8b4e","os":"linux","arch":"arm64","volumes":null,"labels":null}`))
	if err != nil || img.Arch != "arm64" || img.Volumes != nil || img.Labels != nil {
		t.Errorf("ParseImageInspect(no volumes) = %+v, %v", img, err)
	}
	if _, err := ParseImageInspect([]byte("sha256:x linux amd64")); err == nil {
		t.Error("ParseImageInspect accepted the old format")
	}
}
