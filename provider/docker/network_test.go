package docker

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

// networkOutput is what the real `docker network ls` printed for
// NetworkLSArgs with three label keys, one of them unset.
const networkOutput = `{"id":"a64967899bbe87cb9ba44b1d99e757a0abc6a9d0c6d3b2592c9e907e4a6d99ee","name":"lbt-probe-net","labels":{"dev.litterbox.slug":"zz","dev.litterbox.repo":"/tmp/a,b repo","dev.litterbox.gitdir":""}}
`

func TestNetworkList(t *testing.T) {
	keys := []string{"dev.litterbox.slug", "dev.litterbox.repo", "dev.litterbox.gitdir"}
	argv := append([]string{"docker"}, NetworkLSArgs([]string{"dev.litterbox.slug"}, keys)...)
	want := []string{"docker", "network", "ls", "--no-trunc", "--filter", "label=dev.litterbox.slug", "--format",
		`{"id":{{json .ID}},"name":{{json .Name}},"labels":{"dev.litterbox.slug":{{json (.Label "dev.litterbox.slug")}},"dev.litterbox.repo":{{json (.Label "dev.litterbox.repo")}},"dev.litterbox.gitdir":{{json (.Label "dev.litterbox.gitdir")}}}}`}
	if !reflect.DeepEqual(argv, want) {
		t.Errorf("argv = %q\nwant %q", argv, want)
	}
	f := &runnertest.Fake{}
	f.Expect(argv, networkOutput, nil)
	f.Expect(argv, "", exitErr(1, stderrNoEngine))
	c := &Client{R: f}
	list, err := c.NetworkList(context.Background(), []string{"dev.litterbox.slug"}, keys)
	if err != nil || len(list) != 1 {
		t.Fatalf("NetworkList = %v, %v", list, err)
	}
	n := list[0]
	if n.Name != "lbt-probe-net" || len(n.ID) != 64 || n.Labels["dev.litterbox.repo"] != "/tmp/a,b repo" {
		t.Errorf("row = %+v", n)
	}
	if _, ok := n.Labels["dev.litterbox.gitdir"]; ok {
		t.Errorf("an empty label must be absent: %q", n.Labels)
	}
	if _, err := c.NetworkList(context.Background(), []string{"dev.litterbox.slug"}, keys); !errors.Is(err, provider.ErrUnreachable) {
		t.Errorf("NetworkList with the engine down = %v; want ErrUnreachable", err)
	}
	if _, err := ParseNetworks([]byte("garbage\n")); err == nil {
		t.Error("ParseNetworks of garbage: no error")
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

// FuzzParseNetworks renders network ls lines, as NetworkLSArgs's format
// prints them, from fuzzed names and label values, and checks ParseNetworks
// gives them back; any input at all must parse or fail, never panic.
func FuzzParseNetworks(f *testing.F) {
	f.Add("lbt-net", "/tmp/a,b repo", "x", []byte(networkOutput))
	f.Add("n", "", "caf\xe9", []byte("{}\n{\n"))
	f.Add("\xef\xbf", "\xbd", "0", []byte{}) // each half invalid, the join valid
	f.Fuzz(func(t *testing.T, name, repo, slug string, raw []byte) {
		_, _ = ParseNetworks(raw)
		if !utf8.ValidString(name) || !utf8.ValidString(repo) || !utf8.ValidString(slug) {
			return // docker prints valid UTF-8 JSON (each value on its own: two halves of a rune make a valid join)
		}
		js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		line := `{"id":` + js("id-"+name) + `,"name":` + js(name) + `,"labels":{"dev.litterbox.repo":` + js(repo) + `,"dev.litterbox.slug":` + js(slug) + "}}\n"
		list, err := ParseNetworks([]byte(line + line))
		if err != nil || len(list) != 2 {
			t.Fatalf("ParseNetworks(%q) = %+v, %v", line, list, err)
		}
		n := list[1]
		if n.Name != name || n.ID != "id-"+name || n.Labels["dev.litterbox.repo"] != repo || n.Labels["dev.litterbox.slug"] != slug {
			t.Errorf("ParseNetworks(%q) = %+v", line, n)
		}
		if _, ok := n.Labels["dev.litterbox.repo"]; ok == (repo == "") {
			t.Errorf("an empty label must be absent, a set one present: %q", n.Labels)
		}
	})
}
