package dotenv

import (
	"testing"
)

func TestParse(t *testing.T) {
	data := []byte("# comment\nA=plain value # note\nexport B='single # kept'\nC=\"dq \\\" esc\"\n\nD=\nE=\"open\nmore\"\nF=last\r\nnot an assignment\nA=again")
	got := Parse(data)
	want := []struct {
		key, value string
		open       bool
	}{
		{"A", "plain value", false}, {"B", "single # kept", false}, {"C", `dq \" esc`, false},
		{"D", "", false}, {"E", "", true}, {"F", "last", false}, {"A", "again", false},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Key != w.key || g.Value != w.value || g.Open != w.open || string(data[g.Start:g.End]) != g.Value {
			t.Errorf("entry %d: got %+v, want %+v", i, g, w)
		}
	}
	if v, ok := Value(data, "A"); !ok || v != "again" {
		t.Errorf("Value(A) = %q, %v; want the last assignment's", v, ok)
	}
	if _, ok := Value(data, "Z"); ok {
		t.Error("Value(Z) found a key the file does not assign")
	}
}

func TestReplace(t *testing.T) {
	data := []byte("KEY=sk-live-123456 # stripe\nOTHER='x'\nexport KEY2=\"quoted-secret\"\n")
	es := Parse(data)
	out := Replace(data, []Entry{es[0], es[2]}, []string{"P1", "P2"})
	want := "KEY=P1 # stripe\nOTHER='x'\nexport KEY2=\"P2\"\n"
	if string(out) != want {
		t.Errorf("Replace = %q, want %q", out, want)
	}
}

func TestIs(t *testing.T) {
	for p, want := range map[string]bool{".env": true, "app/.env.local": true, ".envrc": false, "env": false, "x.env": false} {
		if Is(p) != want {
			t.Errorf("Is(%q) = %v, want %v", p, !want, want)
		}
	}
}
