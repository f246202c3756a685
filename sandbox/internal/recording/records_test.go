package recording

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// The files a snapshot keeps for the next one read back as they were
// written, names as bytes; a file cut short reads as none (the snapshot
// then computes it again).
func TestRecordFilesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	h := &api.Handle{Slug: "s", Repo: &api.Repo{Git: &git.Repo{Root: dir, CommonDir: filepath.Join(dir, ".git")}}}
	st := recordState{Tip: "abc", Excludes: "e1", Ignored: []string{"node_modules", "b\xffad"}, Tracked: []string{"node_modules"}, Unread: []string{""}, Linked: []string{"x/y"}}
	if err := writeRecordState(h, st); err != nil {
		t.Fatal(err)
	}
	if got := readRecordState(h); !reflect.DeepEqual(got, st) {
		t.Errorf("record = %+v, want %+v", got, st)
	}
	rec := &Recorder{Common: &core.Common{Log: log.New(os.Stderr)}}
	files := []pendingFile{{"big.bin", 1 << 30}, {"", 3}, {"caf\xe9", 0}}
	rec.writePending(h, files)
	if got := readPending(h); !reflect.DeepEqual(got, files) {
		t.Errorf("pending = %+v, want %+v", got, files)
	}
	for p, whole := range map[string][]byte{recordStatePath(h): []byte("Cabc\x00Exy"), pendingPath(h): []byte("Pbig.bin\x00")} {
		if err := os.WriteFile(p, whole, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := readRecordState(h); !reflect.DeepEqual(got, recordState{}) {
		t.Errorf("a record cut short reads as %+v", got)
	}
	if got := readPending(h); got != nil {
		t.Errorf("a pending list cut short reads as %+v", got)
	}
}
