package harnessconf

import (
	"testing"
)

// The files setup merges into come with the repository, so anyone who can
// push to it writes them. Whatever they hold, setup either refuses them
// or leaves a file that holds every setting and that a second run leaves
// as it is.

func FuzzEditTOML(f *testing.F) {
	for _, seed := range []string{"", "model = \"x\"\n", "[features]\nshell_tool = true\n", "features = { a = 1 }\n",
		"[mcp_servers.litterbox.env]\nA = \"1\"\n", "a.b.c = 1\n[[x]]\ny = 2\n", "sandbox_mode = 'x' # c\r\n"} {
		f.Add(seed)
	}
	settings := harnesses["codex"][0].settings
	f.Fuzz(func(t *testing.T, doc string) {
		out, _, err := editTOML([]byte(doc), settings)
		if err != nil {
			return
		}
		d, err := parseTOML(out)
		if err != nil {
			t.Fatalf("%q gave %q, which does not parse: %v", doc, out, err)
		}
		for _, s := range settings {
			if have, ok := d.lookup(s.path); !ok || (s.how == replace && !equalTOML(have, s.value)) {
				t.Fatalf("%q gave %q, without %v", doc, out, s.path)
			}
		}
		again, changes, err := editTOML(out, settings)
		if err != nil || len(changes) > 0 || string(again) != string(out) {
			t.Fatalf("%q gave %q; a second run: %q %v", doc, out, changes, err)
		}
	})
}

func FuzzEditJSON(f *testing.F) {
	for _, seed := range []string{"", "{}", `{"permissions": {"deny": ["Bash"]}}`, `{"permissions": 1}`, `[]`, `{"a": 1.50e3, "b": null}`} {
		f.Add(seed)
	}
	settings := harnesses["claude"][1].settings
	f.Fuzz(func(t *testing.T, doc string) {
		out, _, err := editJSON([]byte(doc), settings)
		if err != nil {
			return
		}
		again, changes, err := editJSON(out, settings)
		if err != nil || len(changes) > 0 || string(again) != string(out) {
			t.Fatalf("%q gave %q; a second run: %q %v", doc, out, changes, err)
		}
	})
}
