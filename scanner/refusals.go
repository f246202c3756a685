package scanner

import (
	"bytes"
	"io"
	"os"
	"syscall"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// A confined sandbox's gateway appends each connection it refuses to a
// file on the volume the two share (RunSpec.Refusals), one JSON line each,
// before the client hears of the refusal. A run notes where that file
// ends before the command and reads what was added by the time it ended:
// the bash call learns what its command was refused without a second exec
// into the gateway. The sandbox can write the volume, not that file: only
// a regular file its gateway owns (RunSpec.RefusalsUID) and no one else may
// write is read; anything else at that name, and a file replaced during
// the command, leaves RunResult.RefusalsRead false, and the host asks the
// gateway instead.

// refusalsMark is where a refusals file ended before a command.
type refusalsMark struct {
	id  [2]uint64
	end int64
	ok  bool
}

// gatewayFile stats path as a refusals file: a regular file (not a link)
// owned by uid, which neither its group nor others may write.
func gatewayFile(fi os.FileInfo, uid int) ([2]uint64, bool) {
	owner, id, ok := fileID(fi)
	return id, ok && fi.Mode().IsRegular() && owner == uid && fi.Mode().Perm()&0o022 == 0
}

// markRefusals notes where spec's refusals file ends; the mark is not ok
// when the spec names none or the file is not the gateway's.
func markRefusals(spec *wire.RunSpec) refusalsMark {
	if spec.Refusals == "" {
		return refusalsMark{}
	}
	fi, err := os.Lstat(spec.Refusals)
	if err != nil {
		return refusalsMark{}
	}
	id, ok := gatewayFile(fi, spec.RefusalsUID)
	return refusalsMark{id: id, end: fi.Size(), ok: ok}
}

// readRefusals fills res with the whole lines the refusals file gained
// since m, when it is the same file, still the gateway's, and they fit in
// MaxRefusals. A file that shrank was started again by the gateway (it
// keeps it small): all of it is new.
func readRefusals(spec *wire.RunSpec, m refusalsMark, res *wire.RunResult) {
	if !m.ok {
		return
	}
	f, err := os.OpenFile(spec.Refusals, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	if id, ok := gatewayFile(fi, spec.RefusalsUID); !ok || id != m.id {
		return
	}
	from := m.end
	if fi.Size() < from {
		from = 0
	}
	if fi.Size()-from > wire.MaxRefusals {
		return
	}
	b, err := io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if err != nil {
		return
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		res.Refusals = string(b[:i+1])
	} else {
		res.Refusals = ""
	}
	res.RefusalsRead = true
}
