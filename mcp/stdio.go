package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/charmbracelet/log"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Limits of the stdio transport (docs/mcp.md, "Limits" and "Conventions").
const (
	// MaxRequestBytes is the longest message read: a write's 16 MiB of
	// content as JSON, where quotes, backslashes, tabs and line ends take
	// two bytes each, with room to spare. A longer one is skipped as it is
	// read, never held whole, and refused.
	MaxRequestBytes = 24 << 20
	// MaxHeldBytes is what the tool calls queued or running may hold in
	// requests together; a call that would pass it is refused while one
	// runs, so two or three of the largest writes cannot be held (and
	// decoded, at several times their size) at once.
	MaxHeldBytes = 32 << 20
	// MaxQueuedCalls is how many tool calls may wait for their turn.
	MaxQueuedCalls = 1024
	// PerSandbox is how many calls on one sandbox run at once; the others
	// wait for their turn, in order.
	PerSandbox = 16
	// MaxRunning is how many calls run at once on all sandboxes together.
	// A sandbox with no call running may start one past it, up to
	// MaxRunningHard: a call never waits for other sandboxes' calls unless
	// that many run.
	MaxRunning     = 64
	MaxRunningHard = 128
	// maxRequests is how many other requests (ping, tools/list, ...) are
	// served at once; past it the reader waits, which happens only when
	// the client stops reading the answers.
	maxRequests = 256
)

// ServeStdio serves MCP on in/out until in reaches EOF or ctx ends. Then it
// cancels the calls running, drops those waiting, waits for the running ones
// to return, and returns. Sandboxes are left running.
//
// It reads stdin itself, rather than through mcp-go's stdio server, and hands
// each message to the mcp-go server's HandleMessage: mcp-go's server reads a
// message whole before any limit applies, queues every call behind one pool
// of workers (a call on one sandbox waited for other sandboxes' calls), loses
// a cancel for a call still queued, and once its queue is full runs calls on
// the reading goroutine, so pings and cancels wait for a call to end.
func (s *Server) ServeStdio(ctx context.Context, version string, in io.Reader, out io.Writer) error {
	softLimit()
	ms := s.MCPServer(version)
	sess := server.NewInProcessSession("stdio", nil)
	if err := ms.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("register the stdio session: %w", err)
	}
	defer ms.UnregisterSession(context.Background(), sess.SessionID())
	ctx, stop := context.WithCancel(ms.WithContext(ctx, sess))
	defer stop()

	t := &transport{
		ms: ms, log: s.log, out: out, base: ctx, maxRequest: s.maxRequest, maxHeld: s.maxHeld,
		calls: map[string]*toolCall{}, queues: map[string]*sandboxQueue{},
		requests: make(chan struct{}, maxRequests),
	}
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		t.notifications(ctx, sess.ClientNotifications())
	}()
	read := make(chan error, 1)
	go func() { read <- t.read(in) }()
	var err error
	select {
	case err = <-read:
	case <-ctx.Done():
	}
	t.shutdown(stop)
	<-notified
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// transport is the stdio side of the server: it reads messages, answers
// pings and requests at once, acts on cancels at once, and runs tool calls
// through per-sandbox queues.
type transport struct {
	ms   *server.MCPServer
	log  *log.Logger
	out  io.Writer
	base context.Context // the session's; cancelled at shutdown

	maxRequest, maxHeld int // MaxRequestBytes and MaxHeldBytes

	wmu sync.Mutex // one message at a time on out

	mu      sync.Mutex
	closed  bool
	calls   map[string]*toolCall     // queued or running, by request id
	queues  map[string]*sandboxQueue // by sandbox
	running int
	queued  int
	held    int // bytes of the requests of calls queued or running
	seq     uint64

	requests chan struct{} // a slot per request being served
	work     sync.WaitGroup
}

// toolCall is a tools/call request, queued or running.
type toolCall struct {
	id      string          // canonical JSON of its id
	rawID   json.RawMessage // as the client sent it
	sandbox string
	msg     []byte
	seq     uint64
	ctx     context.Context
	cancel  context.CancelFunc
	running bool
	// cancelled: the client cancelled it while it ran; its response is
	// dropped.
	cancelled bool
}

// sandboxQueue holds one sandbox's calls waiting for their turn.
type sandboxQueue struct {
	waiting []*toolCall
	running int
}

// read reads and dispatches messages until in ends.
func (t *transport) read(in io.Reader) error {
	lr := &lineReader{r: bufio.NewReaderSize(in, 64<<10), max: t.maxRequest}
	for {
		msg, big, err := lr.next()
		if err != nil {
			return err
		}
		if big != nil {
			t.refuseOversize(big)
			continue
		}
		t.dispatch(msg)
	}
}

// envelopeOf is the part of a message that routes it. (Not its params: a
// RawMessage would copy a write's content once more.)
type envelopeOf struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// dispatch routes one message: a cancel acts at once, a tool call goes to
// its sandbox's queue, any other request is served on its own goroutine.
func (t *transport) dispatch(msg []byte) {
	var env envelopeOf
	if err := json.Unmarshal(msg, &env); err != nil {
		// mcp-go answers with a parse error, as before.
		t.serve(nil, msg)
		return
	}
	hasID := len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case env.Method == string(mcp.MethodNotificationCancelled):
		t.cancelled(msg)
	case env.Method == "" && hasID && (env.Result != nil || env.Error != nil):
		// A response to a request of ours: the server sends none.
		t.log.Debug("ignored a response from the client", "id", string(env.ID))
	case env.Method == string(mcp.MethodToolsCall) && hasID:
		t.enqueue(env, msg)
	case hasID:
		t.serve(env.ID, msg)
	default:
		// Notifications (initialized, ...) are quick and answer nothing.
		t.handle(t.base, nil, msg)
	}
}

// serve answers a request other than a tool call on its own goroutine.
func (t *transport) serve(id json.RawMessage, msg []byte) {
	t.requests <- struct{}{}
	// Add under mu, as startLocked does: shutdown's Wait must not start
	// before it.
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		<-t.requests
		return
	}
	t.work.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.work.Done()
		defer func() { <-t.requests }()
		if resp := t.handle(t.base, id, msg); resp != nil {
			t.write(resp)
		}
	}()
}

// handle runs the mcp-go server on msg. A panic becomes an internal error
// (mcp-go recovers those of tool handlers; this covers the rest).
func (t *transport) handle(ctx context.Context, id json.RawMessage, msg []byte) (resp any) {
	defer func() {
		if r := recover(); r != nil {
			t.log.Error("panic serving a message", "err", r)
			if id != nil {
				resp = rpcError(id, mcp.INTERNAL_ERROR, fmt.Sprintf("internal error: %v", r))
			}
		}
	}()
	if r := t.ms.HandleMessage(ctx, msg); r != nil {
		return r
	}
	return nil
}

// enqueue queues a tool call on its sandbox, or refuses it when the server
// holds too much already.
func (t *transport) enqueue(env envelopeOf, msg []byte) {
	id := canonicalID(env.ID)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	var refusal string
	switch {
	case t.calls[id] != nil:
		t.mu.Unlock()
		t.write(rpcError(env.ID, mcp.INVALID_REQUEST, fmt.Sprintf("request id %s is already in use by a call that has not ended; use a new id", env.ID)))
		return
	case t.queued >= MaxQueuedCalls:
		refusal = fmt.Sprintf("the server has %d calls waiting for their turn already, the most it queues; nothing was done. Retry when some have answered.", t.queued)
	case t.held > 0 && t.held+len(msg) > t.maxHeld:
		refusal = fmt.Sprintf("this request (%d bytes) and the calls not yet answered (%d bytes of requests) pass the %d bytes the server holds at once; nothing was done. Retry when the other calls have answered.", len(msg), t.held, t.maxHeld)
	}
	if refusal != "" {
		t.mu.Unlock()
		t.log.Warn("tool call refused", "id", string(env.ID), "why", refusal)
		t.write(rpcResult(env.ID, mcp.NewToolResultError(refusal)))
		return
	}
	ctx, cancel := context.WithCancel(t.base)
	t.seq++
	c := &toolCall{id: id, rawID: env.ID, sandbox: callSandbox(msg), msg: msg, seq: t.seq, ctx: ctx, cancel: cancel}
	t.calls[id] = c
	q := t.queues[c.sandbox]
	if q == nil {
		q = &sandboxQueue{}
		t.queues[c.sandbox] = q
	}
	q.waiting = append(q.waiting, c)
	t.queued++
	t.held += len(msg)
	t.startLocked()
	t.mu.Unlock()
}

// callSandbox is the sandbox a tool call works on: its "sandbox" argument,
// or for sandbox-create the one it makes. Calls without one share a queue.
func callSandbox(msg []byte) string {
	var m struct {
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Sandbox json.RawMessage `json:"sandbox"`
				Name    json.RawMessage `json:"name"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return ""
	}
	p := m.Params
	arg := p.Arguments.Sandbox
	if len(arg) == 0 && p.Name == "sandbox-create" {
		arg = p.Arguments.Name
	}
	var name string
	if json.Unmarshal(arg, &name) != nil {
		return ""
	}
	if slug, err := api.Slugify(name); err == nil {
		return slug
	}
	return name
}

// startLocked starts every call that may start: of the sandboxes with calls
// waiting, the one with the fewest running goes first, then the one whose
// oldest call came first. t.mu is held.
func (t *transport) startLocked() {
	for !t.closed {
		var best *sandboxQueue
		for _, q := range t.queues {
			if len(q.waiting) == 0 || !t.mayStart(q) {
				continue
			}
			if best == nil || q.running < best.running || q.running == best.running && q.waiting[0].seq < best.waiting[0].seq {
				best = q
			}
		}
		if best == nil {
			return
		}
		c := best.waiting[0]
		best.waiting = best.waiting[1:]
		best.running++
		t.running++
		t.queued--
		c.running = true
		t.work.Add(1)
		go t.run(c)
	}
}

func (t *transport) mayStart(q *sandboxQueue) bool {
	if q.running >= PerSandbox {
		return false
	}
	return t.running < MaxRunning || q.running == 0 && t.running < MaxRunningHard
}

// run runs a call and sends its response, unless it was cancelled.
func (t *transport) run(c *toolCall) {
	defer t.work.Done()
	msg := c.msg
	c.msg = nil
	resp := t.handle(c.ctx, c.rawID, msg)
	t.mu.Lock()
	delete(t.calls, c.id)
	q := t.queues[c.sandbox]
	q.running--
	if q.running == 0 && len(q.waiting) == 0 {
		delete(t.queues, c.sandbox)
	}
	t.running--
	t.held -= len(msg)
	dropped := c.cancelled || c.ctx.Err() != nil
	t.startLocked()
	t.mu.Unlock()
	c.cancel()
	switch {
	case c.cancelled:
		t.log.Info("call cancelled by the client: no response sent", "id", string(c.rawID))
	case dropped:
		t.log.Info("call stopped by the server's shutdown: no response sent", "id", string(c.rawID))
	case resp != nil:
		t.write(resp)
	}
}

// cancelled acts on notifications/cancelled: a queued call is dropped (it
// never runs and gets no response), a running one is cancelled (its response
// is dropped). A cancel for anything else goes to mcp-go.
func (t *transport) cancelled(msg []byte) {
	var m struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	_ = json.Unmarshal(msg, &m)
	id := canonicalID(m.Params.RequestID)
	t.mu.Lock()
	c := t.calls[id]
	switch {
	case c == nil:
		t.mu.Unlock()
		t.handle(t.base, nil, msg)
		return
	case c.running:
		c.cancelled = true
		t.mu.Unlock()
		c.cancel()
		return
	}
	q := t.queues[c.sandbox]
	q.waiting = slices.DeleteFunc(q.waiting, func(w *toolCall) bool { return w == c })
	if q.running == 0 && len(q.waiting) == 0 {
		delete(t.queues, c.sandbox)
	}
	delete(t.calls, id)
	t.queued--
	t.held -= len(c.msg)
	t.mu.Unlock()
	c.cancel()
	t.log.Info("call cancelled by the client while queued: it never ran, no response sent", "id", string(c.rawID), "sandbox", c.sandbox)
}

// shutdown stops taking messages, drops the queued calls, cancels the
// running ones (stop cancels the session's context) and waits for them.
func (t *transport) shutdown(stop context.CancelFunc) {
	t.mu.Lock()
	t.closed = true
	dropped := t.queued
	for _, q := range t.queues {
		for _, c := range q.waiting {
			delete(t.calls, c.id)
			c.cancel()
		}
		q.waiting = nil
	}
	t.queued = 0
	t.mu.Unlock()
	if dropped > 0 {
		t.log.Info("input closed: calls still queued dropped unrun", "calls", dropped)
	}
	stop()
	t.work.Wait()
}

// notifications sends what the server notifies (progress) until ctx ends.
func (t *transport) notifications(ctx context.Context, ch <-chan mcp.JSONRPCNotification) {
	for {
		select {
		case n := <-ch:
			t.write(n)
		case <-ctx.Done():
			return
		}
	}
}

// write sends one message, a line of JSON.
func (t *transport) write(msg any) {
	data, err := json.Marshal(msg)
	if err != nil {
		t.log.Error("could not encode a message", "err", err)
		return
	}
	data = append(data, '\n')
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if _, err := t.out.Write(data); err != nil {
		t.log.Warn("could not write to stdout", "err", err)
	}
}

// refuseOversize answers a message too long to read: a tool call gets a tool
// error that says what to do instead, another request a JSON-RPC error, a
// notification nothing.
func (t *transport) refuseOversize(big *oversize) {
	t.log.Warn("message over the size limit skipped unread", "bytes", big.n, "limit", t.maxRequest, "method", big.method, "id", string(big.id))
	if big.id == nil {
		return
	}
	msg := fmt.Sprintf("the request is %d bytes, over the limit of %d bytes for one request; it was not read, and nothing was done.", big.n, t.maxRequest)
	if big.method == string(mcp.MethodToolsCall) {
		msg += fmt.Sprintf(" write and patch take at most %d bytes: write a big file in parts with bash (cat >> file, each part under 1 MiB), or make it with a command in the sandbox.", api.MaxWriteBytes)
		t.write(rpcResult(big.id, mcp.NewToolResultError(msg)))
		return
	}
	t.write(rpcError(big.id, mcp.INVALID_REQUEST, msg))
}

// rpcResult is a response with result, to the request id.
func rpcResult(id json.RawMessage, result any) any {
	return struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{mcp.JSONRPC_VERSION, id, result}
}

// rpcError is an error response to the request id.
func rpcError(id json.RawMessage, code int, msg string) any {
	return struct {
		JSONRPC string                  `json:"jsonrpc"`
		ID      json.RawMessage         `json:"id"`
		Error   mcp.JSONRPCErrorDetails `json:"error"`
	}{mcp.JSONRPC_VERSION, id, mcp.NewJSONRPCErrorDetails(code, msg, nil)}
}

// canonicalID is a request id as one text for each value (1 and 1.0 are one
// id), so a cancel finds its call however the client spelled it.
func canonicalID(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(data)
}

// lineReader reads newline-ended messages of at most max bytes; a longer one
// is skipped as it is read, keeping only what its envelope says.
type lineReader struct {
	r   *bufio.Reader
	max int
}

// oversize is what is known of a message too long to read.
type oversize struct {
	n      int64           // its length, line end included
	id     json.RawMessage // its id, nil if it had none (a notification)
	method string
}

// next returns the next message that is not blank, or the oversize of one
// too long. A last message without a line end is dropped at EOF, as mcp-go
// did.
func (l *lineReader) next() ([]byte, *oversize, error) {
	var line []byte
	var env *envelope
	var n int64
	for {
		frag, err := l.r.ReadSlice('\n')
		n += int64(len(frag))
		if env == nil && len(line)+len(frag) > l.max+1 {
			env = &envelope{}
			env.feed(line)
			line = nil
		}
		if env != nil {
			env.feed(frag)
		} else {
			line = append(line, frag...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return nil, nil, err
		case env != nil:
			return nil, &oversize{n: n, id: env.id, method: env.method}, nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line, nil, nil
		}
		n = 0
	}
}

// envelope finds the top-level "id" and "method" of a JSON message fed to it
// in pieces, keeping a few bytes of each, whatever their order and whatever
// comes between.
type envelope struct {
	depth   int
	inStr   bool
	esc     bool
	wantKey bool // at depth 1: the next string is a key
	inKey   bool
	key     []byte
	field   string // "id" or "method" while its value is read
	val     []byte

	id     json.RawMessage
	method string
}

// maxEnvelopeValue is the most kept of a key or of an id or method value.
const maxEnvelopeValue = 256

func (e *envelope) feed(p []byte) {
	for i := 0; i < len(p); i++ {
		// Inside a string that is neither a key nor a kept value, only a
		// quote or a backslash matters: skip to the next one (a megabyte
		// of content is scanned at memchr speed).
		if e.inStr && !e.esc && !e.inKey && e.field == "" {
			j := bytes.IndexAny(p[i:], `"\`)
			if j < 0 {
				return
			}
			i += j
		}
		e.byte(p[i])
	}
}

func (e *envelope) byte(b byte) {
	if e.inStr {
		end := false
		switch {
		case e.esc:
			e.esc = false
		case b == '\\':
			e.esc = true
		case b == '"':
			e.inStr, end = false, true
		}
		switch {
		case e.inKey && end:
			e.inKey = false
		case e.inKey:
			e.key = appendBounded(e.key, b)
		case e.field != "":
			e.val = appendBounded(e.val, b)
		}
		return
	}
	switch b {
	case ' ', '\t', '\r', '\n':
		return
	case '"':
		e.inStr = true
		if e.depth == 1 && e.wantKey {
			e.inKey, e.wantKey, e.key = true, false, e.key[:0]
			return
		}
	case ':':
		if e.depth == 1 && e.field == "" {
			if k := string(e.key); k == "id" || k == "method" {
				e.field, e.val = k, e.val[:0]
			}
			return
		}
	case ',':
		if e.depth == 1 {
			e.endValue()
			e.wantKey = true
			return
		}
	case '{', '[':
		e.depth++
		if e.depth == 1 {
			e.wantKey = b == '{'
			return
		}
	case '}', ']':
		e.depth--
		if e.depth == 0 {
			e.endValue()
			return
		}
	}
	if e.field != "" {
		e.val = appendBounded(e.val, b)
	}
}

// endValue keeps the value of the field just read, when it is whole.
func (e *envelope) endValue() {
	field := e.field
	e.field = ""
	if len(e.val) > maxEnvelopeValue || !json.Valid(e.val) {
		return
	}
	switch field {
	case "id":
		if e.val[0] == '"' || e.val[0] == '-' || e.val[0] >= '0' && e.val[0] <= '9' {
			e.id = slices.Clone(e.val)
		}
	case "method":
		_ = json.Unmarshal(e.val, &e.method)
	}
}

// appendBounded appends b to s unless s holds more than maxEnvelopeValue
// bytes already (then the value counts as too long).
func appendBounded(s []byte, b byte) []byte {
	if len(s) > maxEnvelopeValue {
		return s
	}
	return append(s, b)
}
