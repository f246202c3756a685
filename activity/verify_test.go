package activity

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// chainedRecord writes n events to a record that rotates every few dozen,
// every seventh a refused connection and every eleventh a failure (kept
// aside too), and returns it.
func chainedRecord(t *testing.T, n int) Record {
	t.Helper()
	r := Record{Dir: t.TempDir(), Sandbox: "box", MaxBytes: 8 << 10, MaxKept: 4 << 10}
	for i := range n {
		e := Event{Kind: KindCall, Tool: "bash", Args: fmt.Sprintf("echo %d", i)}
		switch {
		case i%7 == 6:
			e = Event{Kind: KindEgress, Target: fmt.Sprintf("h%d.example:443", i)}
		case i%11 == 10:
			e.Error = "exit 1"
		}
		if err := r.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// verified is Verify's report of r, which must read.
func verified(t *testing.T, r Record) Report {
	t.Helper()
	rep, err := Verify(r.Dir, r.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// broken is what the chain named says is broken, failing when another is.
func broken(t *testing.T, rep Report, name string) string {
	t.Helper()
	var got string
	for _, c := range rep.Chains {
		if c.Name == name {
			got = c.Broken
		} else if c.Broken != "" {
			t.Errorf("chain %s broken too: %s", c.Name, c.Broken)
		}
	}
	if got == "" {
		t.Fatalf("chain %s verifies: %+v", name, rep)
	}
	return got
}

// editFile changes the file path with fn.
func editFile(t *testing.T, path string, fn func([][]byte) [][]byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte{'\n'})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if err := os.WriteFile(path, bytes.Join(fn(lines), nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An untouched record verifies, across its rotations and its stores of
// kept events, theirs full and rotating too.
func TestVerifyUntouched(t *testing.T) {
	r := chainedRecord(t, 600)
	if _, err := os.Stat(r.OldPath()); err != nil {
		t.Fatal("the record never rotated")
	}
	if _, err := os.Stat(r.lastPaths(ClassEgress)[0]); err != nil {
		t.Fatal("the newest refusals never rotated")
	}
	rep := verified(t, r)
	if !rep.OK() {
		t.Fatalf("an untouched record does not verify: %+v", rep)
	}
	if len(rep.Chains) != 5 {
		t.Errorf("chains = %+v, want the record and four stores", rep.Chains)
	}
	if c := rep.Chains[0]; c.Files != 2 || c.Last != 600 || c.First <= 1 || c.Lines != int(c.Last-c.First+1) {
		t.Errorf("record = %+v, want events up to 600 in two files", c)
	}
}

// Each change names the line after which the chain does not follow.
func TestVerifyNamesEachChange(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, r Record)
		want   string
	}{
		{"a line edited", func(t *testing.T, r Record) {
			editFile(t, r.Path(), func(l [][]byte) [][]byte {
				l[3] = bytes.Replace(l[3], []byte(`"echo `), []byte(`"ECHO `), 1)
				return l
			})
		}, "box.jsonl line 5 does not follow box.jsonl line 4"},
		{"a line taken out", func(t *testing.T, r Record) {
			editFile(t, r.Path(), func(l [][]byte) [][]byte { return append(l[:3:3], l[4:]...) })
		}, "does not follow box.jsonl line 3"},
		{"the last line taken out", func(t *testing.T, r Record) {
			editFile(t, r.Path(), func(l [][]byte) [][]byte { return l[:len(l)-1] })
		}, "its head says event 600: its end was cut"},
		{"the last line cut short", func(t *testing.T, r Record) {
			editFile(t, r.Path(), func(l [][]byte) [][]byte {
				l[len(l)-1] = l[len(l)-1][:20]
				return l
			})
		}, "is cut short"},
		{"the last line edited", func(t *testing.T, r Record) {
			editFile(t, r.Path(), func(l [][]byte) [][]byte {
				l[len(l)-1] = bytes.Replace(l[len(l)-1], []byte(`"echo `), []byte(`"ECHO `), 1)
				return l
			})
		}, "(event 600) is not the line its head names"},
		{"the rotated file removed", func(t *testing.T, r Record) {
			if err := os.Remove(r.OldPath()); err != nil {
				t.Fatal(err)
			}
		}, "box.1.jsonl is missing, or lines were taken from the start: box.jsonl line 1, the first line left, follows a line that is not there"},
		{"the newest file removed", func(t *testing.T, r Record) {
			if err := os.Remove(r.Path()); err != nil {
				t.Fatal(err)
			}
		}, "box.jsonl is missing"},
		{"the first line of the rotated file taken out", func(t *testing.T, r Record) {
			editFile(t, r.OldPath(), func(l [][]byte) [][]byte { return l[1:] })
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := chainedRecord(t, 600)
			tt.change(t, r)
			rep := verified(t, r)
			if tt.want == "" {
				// What a plain chain cannot tell from a rotation
				// (docs/security.md).
				if !rep.OK() {
					t.Errorf("a cut where rotation cuts: %+v", rep)
				}
				return
			}
			if got := broken(t, rep, "record"); !strings.Contains(got, tt.want) {
				t.Errorf("broken = %q, want %q", got, tt.want)
			}
		})
	}
}

// A change at the end of the record stays shown once more lines follow
// it: the next line follows what the head says was written, not the file.
func TestVerifyChangeAtTheEndThenAppend(t *testing.T) {
	for _, change := range []func([][]byte) [][]byte{
		func(l [][]byte) [][]byte { return l[:len(l)-1] },
		func(l [][]byte) [][]byte {
			l[len(l)-1] = bytes.Replace(l[len(l)-1], []byte(`"echo `), []byte(`"ECHO `), 1)
			return l
		},
	} {
		r := chainedRecord(t, 100)
		editFile(t, r.Path(), change)
		for range 3 {
			if err := r.Append(Event{Kind: KindPause}); err != nil {
				t.Fatal(err)
			}
		}
		if rep := verified(t, r); rep.OK() {
			t.Errorf("a change at the end, then appends, verifies: %+v", rep)
		}
	}
}

// A change to a store of kept events is named in that store.
func TestVerifyKeptStores(t *testing.T) {
	r := chainedRecord(t, 600)
	editFile(t, r.keptPath(ClassEgress), func(l [][]byte) [][]byte { return append(l[:2:2], l[3:]...) })
	if got := broken(t, verified(t, r), "egress store"); !strings.Contains(got, "box.egress.jsonl line 3 does not follow box.egress.jsonl line 2") {
		t.Errorf("broken = %q", got)
	}
	r = chainedRecord(t, 600)
	editFile(t, r.keptPath(ClassFailed), func(l [][]byte) [][]byte { return l[1:] })
	if got := broken(t, verified(t, r), "failed store"); !strings.Contains(got, "lines were taken from the start") {
		t.Errorf("broken = %q", got)
	}
}

// A file Tidy removes is noted, so the record still verifies; the same
// file removed by hand does not.
func TestVerifyAfterTidy(t *testing.T) {
	r := chainedRecord(t, 600)
	r.MaxTotal = 1 // everything Tidy may remove goes
	r.Tidy(time.Now())
	if _, err := os.Stat(r.OldPath()); err == nil {
		t.Fatal("Tidy left the older file")
	}
	rep := verified(t, r)
	if !rep.OK() || len(rep.Chains[0].Notes) != 1 || !strings.Contains(rep.Chains[0].Notes[0], "box.1.jsonl was removed by litterbox") {
		t.Errorf("after Tidy: %+v", rep)
	}
}

// A record written before the chains verifies with its lines counted as
// not checked; the chained lines after them are checked.
func TestVerifyOlderRecord(t *testing.T) {
	r := Record{Dir: t.TempDir(), Sandbox: "old"}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := `{"time":"2026-01-01T00:00:00Z","seq":1,"sandbox":"old","kind":"create"}` + "\n" +
		`{"time":"2026-01-01T00:00:01Z","seq":2,"sandbox":"old","kind":"pause"}` + "\n"
	if err := os.WriteFile(r.Path(), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := verified(t, r)
	if !rep.OK() || rep.Chains[0].Unlinked != 2 {
		t.Errorf("older record: %+v", rep)
	}
	for range 2 {
		if err := r.Append(Event{Kind: KindResume}); err != nil {
			t.Fatal(err)
		}
	}
	rep = verified(t, r)
	// the second line is checked now: the third links to it
	if !rep.OK() || rep.Chains[0].Unlinked != 1 || rep.Chains[0].Last != 4 {
		t.Errorf("older record continued: %+v", rep)
	}
	editFile(t, r.Path(), func(l [][]byte) [][]byte {
		l[1] = bytes.Replace(l[1], []byte("pause"), []byte("merge"), 1)
		return l
	})
	if got := broken(t, verified(t, r), "record"); !strings.Contains(got, "old.jsonl line 3 does not follow old.jsonl line 2") {
		t.Errorf("broken = %q", got)
	}
}

// A follower says where a line appended does not follow the one before.
func TestFollowFlagsBrokenChain(t *testing.T) {
	r := Record{Dir: t.TempDir(), Sandbox: "box"}
	for range 3 {
		if err := r.Append(Event{Kind: KindPause}); err != nil {
			t.Fatal(err)
		}
	}
	f := &Follower{Dir: r.Dir, Since: time.Now()}
	got := collect(t, f, 3, func() {
		// a forged line: right number, link to nothing
		line := fmt.Sprintf(`{"time":%q,"seq":4,"prev":"%s","sandbox":"box","kind":"merge"}`+"\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Repeat("0", 64))
		if err := appendLine(r.Path(), []byte(line)); err != nil {
			t.Fatal(err)
		}
		if err := r.Append(Event{Kind: KindResume}); err != nil {
			t.Fatal(err)
		}
	})
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, string(e.Kind))
	}
	if strings.Join(kinds, " ") != "broken merge resume" || got[0].Seq != 4 || !strings.Contains(got[0].Message, "does not follow") {
		t.Errorf("followed %v: %+v", kinds, got)
	}
}

// The link a line carries is read without decoding it, and never from
// agent text.
func TestLinePrev(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, tt := range []struct{ line, want string }{
		{`{"time":"2026-01-01T00:00:00Z","seq":12,"prev":"` + h + `","kind":"x"}`, h},
		{`{"time":"2026-01-01T00:00:00Z","seq":12,"kind":"call","args":"x\",\"prev\":\"` + h + `"}`, ""},
		{`{"time":"2026-01-01T00:00:00Z","seq":12,"prev":"abc","kind":"x"}`, ""},
	} {
		if got := linePrev([]byte(tt.line)); got != tt.want {
			t.Errorf("linePrev(%s) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// BenchmarkVerify is what `audit verify` costs on a record of 100,000
// events (rotating at the default size, so most are rotated away: the
// figure is for events read, b.N x 100,000 over the files of the record
// written whole).
func BenchmarkVerify(b *testing.B) {
	dir := b.TempDir()
	r := Record{Dir: dir, Sandbox: "bench", MaxBytes: 1 << 40}
	exit := 0
	e := Event{Kind: KindCall, By: ByMCP, Tool: "bash", Args: "go test ./...", Exit: &exit, Ms: 120,
		Commit: strings.Repeat("ab", 20), Files: []string{"a.go", "b.go"}, Output: strings.Repeat("ok\n", 20)}
	for range 100_000 {
		if err := r.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := Verify(dir, "bench")
		if err != nil || !rep.OK() || rep.Chains[0].Lines != 100_000 {
			b.Fatal(err, rep)
		}
	}
}

// The record of a deleted sandbox that Tidy removed whole starts anew, its
// heads gone with it: a sandbox made again under the name verifies.
func TestVerifyAfterRetention(t *testing.T) {
	r := chainedRecord(t, 100)
	if err := r.Append(Event{Kind: KindDelete}); err != nil {
		t.Fatal(err)
	}
	r.Retention = time.Nanosecond
	r.Tidy(time.Now().Add(time.Hour))
	if _, err := os.Stat(r.Path()); err == nil {
		t.Fatal("Tidy left the record of a deleted sandbox")
	}
	if err := r.Append(Event{Kind: KindCreate}); err != nil {
		t.Fatal(err)
	}
	if rep := verified(t, r); !rep.OK() || rep.Chains[0].First != 1 || rep.Chains[0].Last != 1 {
		t.Errorf("made again: %+v", rep)
	}
}
