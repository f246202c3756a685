package docker

import (
	"slices"
	"testing"
)

func TestParseSubnets(t *testing.T) {
	out := "10.213.0.0/26 \n10.213.0.64/26 \n\n\n10.88.0.1/16 fd00:1::/64 bogus 10.213.0.0/26\n"
	if got := ParseSubnets([]byte(out)); !slices.Equal(got, []string{"10.213.0.0/26", "10.213.0.64/26", "10.88.0.0/16", "fd00:1::/64"}) {
		t.Errorf("ParseSubnets = %q", got)
	}
}

func TestParseHostAddrs(t *testing.T) {
	out := `1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host \       valid_lft forever preferred_lft forever
2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\       valid_lft forever preferred_lft forever
2: eth0    inet6 fd00::2/64 scope global flags 02 \       valid_lft forever preferred_lft forever
2: eth0    inet6 fe80::fc:ff:fe00:1/64 scope link \       valid_lft forever preferred_lft forever
3: docker0    inet 172.17.0.1/16 brd 172.17.255.255 scope global docker0\       valid_lft forever preferred_lft forever
`
	if got := ParseHostAddrs([]byte(out)); !slices.Equal(got, []string{"192.0.2.2", "fd00::2", "172.17.0.1"}) {
		t.Errorf("got %q", got)
	}
}

func TestOnlyGone(t *testing.T) {
	for stderr, want := range map[string]bool{
		"Error response from daemon: network a3d695db524d not found":                                         true,
		"Error response from daemon: network a not found\nError response from daemon: network b not found\n": true,
		"": false,
		"Cannot connect to the Docker daemon at unix:///var/run/docker.sock": false,
		"Error response from daemon: network a not found\npermission denied": false,
		"Error response from daemon: get lbcache-x: no such volume":          true,
		"Error: no such volume lbcache-x":                                    true,
	} {
		if got := onlyGone(stderr); got != want {
			t.Errorf("onlyGone(%q) = %v, want %v", stderr, got, want)
		}
	}
}
