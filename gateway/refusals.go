package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A bash call in the sandbox learns what its command was refused from
// RefusalsFile on the shared volume, read by the run itself (the scanner
// notes where the file ends before the command and reads what it gained
// after): asking the gateway by a second exec doubled the call's time.
// The gateway writes each refusal there before the client hears of it.

// refusalsMax is the size past which the log starts again: the host
// collects every record from the gateway itself (Since); this file only
// tells one run what was refused during it.
const refusalsMax = 1 << 20

// RefusalLog is the gateway's refusals file: its own (the sandbox user's
// group may read it, not write it) and kept under refusalsMax.
type RefusalLog struct {
	f    *os.File
	size int64
	max  int64
}

// OpenRefusalLog makes dir's refusals file anew: whatever the sandbox left
// at its name is removed (the gateway owns the directory), and the file is
// made exclusively, so it is the gateway's own.
func OpenRefusalLog(dir string) (*RefusalLog, error) {
	path := filepath.Join(dir, RefusalsFile)
	var err error
	for range 3 {
		if err = os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			break
		}
		var f *os.File
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o640)
		if err == nil {
			// The umask may have left the group's write bit: it goes.
			if err = f.Chmod(0o640); err != nil {
				f.Close()
				return nil, err
			}
			return &RefusalLog{f: f, max: refusalsMax}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	return nil, fmt.Errorf("refusals file %s: %w", path, err)
}

// Write appends one record (the audit writes whole lines, under its
// lock), first emptying the file when it would grow past its limit.
func (l *RefusalLog) Write(b []byte) (int, error) {
	if l.size+int64(len(b)) > l.max {
		if err := l.f.Truncate(0); err != nil {
			return 0, err
		}
		l.size = 0
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	return n, err
}
