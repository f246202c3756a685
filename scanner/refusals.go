package scanner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

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
//
// A sandbox linked to its gateway by network (Kubernetes) shares no volume
// with it: the run asks the gateway's proxy (RunSpec.RefusalsVia), at
// RunSpec.Refusals, a URL the proxy answers itself, where its refusals
// stand before the command (a mark: its run and its count of refusals) and
// which refusals came after that mark once the command ended, in the same
// lines (getRefusals). No clock decides which call a refusal belongs to.
// It reads what it could read on a volume: its own refusals, nothing the
// human's record takes from it.

// refusalsMark is where a refusals file ended before a command, or, linked
// by network, where the gateway's refusals stood.
type refusalsMark struct {
	id    [2]uint64
	end   int64
	boot  string
	after uint64
	ok    bool
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
	if spec.RefusalsVia != "" {
		var m refusalsMark
		b, ok := getRefusals(spec, "mark", nil)
		if ok && json.Unmarshal(b, &struct {
			Boot  *string `json:"boot"`
			After *uint64 `json:"after"`
		}{&m.boot, &m.after}) == nil && m.boot != "" {
			m.ok = true
		}
		return m
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
	if spec.RefusalsVia != "" {
		// The host asks the gateway itself after the mark when this
		// answer does not come.
		res.RefusalsBoot, res.RefusalsAfter = m.boot, m.after
		if b, ok := getRefusals(spec, "", url.Values{"boot": {m.boot}, "after": {strconv.FormatUint(m.after, 10)}}); ok {
			setRefusals(res, b)
		}
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
	setRefusals(res, b)
}

// setRefusals has res hold b's whole lines, as read.
func setRefusals(res *wire.RunResult, b []byte) {
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		res.Refusals = string(b[:i+1])
	} else {
		res.Refusals = ""
	}
	res.RefusalsRead = true
}

// Bounds of a question to the gateway's proxy: its answer comes within
// fetchTimeout and holds at most wire.MaxRefusals (as the file's lines
// read are), or the host asks the gateway instead.
const fetchTimeout = time.Second

// getRefusals asks the gateway's proxy (spec.RefusalsVia) for path under
// spec.Refusals with query q, on a connection of its own (no proxy setting
// of the sandbox's is read), and returns its answer: only a 200 with a
// Content-Length up to wire.MaxRefusals is read; any other answer (a
// redirect included) is not followed and reads nothing.
func getRefusals(spec *wire.RunSpec, path string, q url.Values) ([]byte, bool) {
	u, err := url.Parse(spec.Refusals)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, false
	}
	u = u.JoinPath(path)
	u.RawQuery = q.Encode()
	deadline := time.Now().Add(fetchTimeout)
	c, err := (&net.Dialer{Deadline: deadline}).Dial("tcp", spec.RefusalsVia)
	if err != nil {
		return nil, false
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u, u.Host); err != nil {
		return nil, false
	}
	br := bufio.NewReaderSize(io.LimitReader(c, wire.MaxRefusals+8<<10), 4<<10)
	status, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		return nil, false
	}
	size := int64(-1)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, false
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, _ := strings.Cut(line, ":")
		if strings.EqualFold(k, "Content-Length") {
			if size, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
				return nil, false
			}
		}
	}
	if size < 0 || size > wire.MaxRefusals {
		return nil, false
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, false
	}
	return b, true
}
