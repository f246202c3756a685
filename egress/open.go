package egress

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// A new confined sandbox's gateway opens its sockets once the sandbox's
// copy step hands it a one-time token (gateway serve -open-sum), instead
// of once the host execs `ctl ready` in it after its start: that exec was
// the last call on a create's path (125-600 ms at load 5-7). The token
// reaches the copy step on its stdin, before the archive, never in an
// argument (which the debug log and the engine's process lists show), and
// the step writes it to the shared volume before the copy, before any of
// the sandbox's own code runs; the gateway reads it there, removes it and
// opens. A gateway started again (the engine restarted it, or someone
// did) has the same -open-sum but finds no token, and waits for `ctl
// ready` from `litterbox resume`, as before. A sandbox with secrets does
// not use it: its gateway opens once it holds their values (ctl secrets,
// then ctl ready).

// OpenToken is a new one-time token and the SHA-256 (hex) its gateway is
// started with (Plan.OpensOn).
func OpenToken() (token, sum string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	token = hex.EncodeToString(b)
	s := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(s[:])
}

// OpensOn makes the plan's gateway open its sockets once the shared
// volume holds the token whose SHA-256 is sum (OpenToken), with or
// without FromImage after it.
func (p *Plan) OpensOn(sum string) {
	flag := []string{"-open-sum", sum}
	p.serve = append(p.serve, flag...)
	p.Gateway.Cmd = append(p.Gateway.Cmd, flag...)
}

// HandOpenToken is the shell line of the copy step that reads the token
// from the first line of its stdin and writes it where the gateway looks
// for it (control.OpenFile), whole (under another name first, removed
// should the rename fail, so that no copy of it stays on the volume): a
// token it cannot write leaves the gateway closed, which the setup's wait
// (WaitReady) reports.
const HandOpenToken = `IFS= read -r t; { umask 022; o=` + Dir + `/.open.$$; printf '%s' "$t" >"$o" && mv -f "$o" ` + Dir + `/` + control.OpenFile + ` || rm -f "$o"; } 2>/dev/null; t=; `
