package atomicfile

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestWriteConcurrent: writers of one path at once leave one of their
// contents whole and no temporary file behind.
func TestWriteConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := []byte{byte('a' + i), byte('a' + i), '\n'}
			if err := Write(path, data, 0o640); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := os.ReadFile(path)
	if err != nil || len(got) != 3 || got[0] != got[1] {
		t.Fatalf("content %q, %v", got, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("folder holds %d files, want the one", len(ents))
	}
}

// TestCreateOnce: of creators of one path exactly one wins, and the file
// holds its data.
func TestCreateOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "id")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := []byte{}
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := Create(path, []byte{byte('a' + i)}, 0o644)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				won = append(won, byte('a'+i))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got, _ := os.ReadFile(path)
	if len(won) != 1 || string(got) != string(won) {
		t.Fatalf("winners %q, file %q", won, got)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("folder holds %d files, want the one", len(ents))
	}
}
