package sandbox

import (
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/scan"
)

// A forged meta whose unsafe paths the parser dropped still asks for the
// right follow-ups: the new directory in full, the ignored file the branch
// tracks.
func TestFollowUpsOfASanitizedMeta(t *testing.T) {
	sc := &scanned{files: map[string]git.Change{}, meta: scan.Meta{
		Dirs:           map[string][]scan.DirEntry{"": {{Name: "ok", Kind: scan.EntryDir}, {Name: "ok.txt", Kind: scan.EntryFile}, {Name: "ign", Kind: scan.EntryNotWalked}}},
		IgnoredChanged: []string{"kept.log"},
		Ignored:        []string{"ign"},
	}}
	fu := sc.followUps(map[string]map[string]git.TreeEntry{"": {"kept.log": {Mode: "100644"}}}, scan.Options{}, recordState{})
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
		meta: scan.Meta{Dirs: map[string][]scan.DirEntry{"": {{Name: "keep.txt", Kind: scan.EntryFile}, {Name: "new.txt", Kind: scan.EntryFile}, {Name: "dir", Kind: scan.EntryFile}, {Name: "becomes", Kind: scan.EntryDir}, {Name: "sub", Kind: scan.EntryDir}, {Name: "ign", Kind: scan.EntryNotWalked}}}},
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
	fu := sc.followUps(trees, scan.Options{}, recordState{})
	if strings.Join(fu.Full, ",") != "becomes" {
		t.Fatalf("followUps = %+v, want the file that became a directory", fu)
	}
}
