package recording

import (
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// A forged meta whose unsafe paths the parser dropped still asks for the
// right follow-ups: the new directory in full, the ignored file the branch
// tracks.
func TestFollowUpsOfASanitizedMeta(t *testing.T) {
	sc := &scanned{files: map[string]git.Change{}, meta: wire.Meta{
		Dirs:           map[string][]wire.DirEntry{"": {{Name: "ok", Kind: wire.EntryDir}, {Name: "ok.txt", Kind: wire.EntryFile}, {Name: "ign", Kind: wire.EntryNotWalked}}},
		IgnoredChanged: []string{"kept.log"},
		Ignored:        []string{"ign"},
	}}
	fu := sc.followUps(map[string]map[string]git.TreeEntry{"": {"kept.log": {Mode: "100644"}}}, wire.Options{}, recordState{})
	if strings.Join(fu.Full, ",") != "ok" || strings.Join(fu.Paths, ",") != "kept.log" {
		t.Errorf("followUps = %+v, want Full [ok] Paths [kept.log]", fu)
	}
}

func TestChanges(t *testing.T) {
	same := git.BlobID([]byte("same\n"))
	trees := map[string]map[string]git.TreeEntry{
		"": {
			"keep.txt": {Mode: "100644", ID: same},
			"gone.txt": {Mode: "100644", ID: git.BlobID([]byte("x"))},
			"dir":      {Mode: "40000", ID: "t1"},
			"becomes":  {Mode: "100644", ID: "b1"},
			"sub":      {Mode: "160000", ID: "c1"},
			"ign":      {Mode: "40000", ID: "t2"},
		},
	}
	sc := &scanned{
		files: map[string]git.Change{
			"keep.txt": {Path: "keep.txt", Mode: "100644", ID: same},                   // touched, unchanged
			"new.txt":  {Path: "new.txt", Mode: "100644", ID: git.BlobID([]byte("n"))}, // added
			"dir":      {Path: "dir", Mode: "100644", ID: git.BlobID([]byte("f"))},     // a directory became a file
		},
		meta: wire.Meta{Dirs: map[string][]wire.DirEntry{"": {{Name: "keep.txt", Kind: wire.EntryFile}, {Name: "new.txt", Kind: wire.EntryFile}, {Name: "dir", Kind: wire.EntryFile}, {Name: "becomes", Kind: wire.EntryDir}, {Name: "sub", Kind: wire.EntryDir}, {Name: "ign", Kind: wire.EntryNotWalked}}}},
	}
	var got []string
	for _, c := range sc.changes(trees) {
		op := "M "
		if c.Delete {
			op = "D "
		}
		got = append(got, op+c.Path)
	}
	want := "D becomes,D dir,M dir,D gone.txt,M new.txt"
	if strings.Join(got, ",") != want {
		t.Fatalf("changes = %v, want %s", got, want)
	}
	fu := sc.followUps(trees, wire.Options{}, recordState{})
	if strings.Join(fu.Full, ",") != "becomes" {
		t.Fatalf("followUps = %+v, want the file that became a directory", fu)
	}
}
