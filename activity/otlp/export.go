package otlp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of the exporter: what it holds while the collector is slow or
// away, how many records go in one request, and how it retries.
const (
	// MaxQueued is the most records waiting to be sent; those past it
	// are dropped, counted, and said.
	MaxQueued = 10_000
	// MaxBatch is the most records one request carries.
	MaxBatch = 512
	// Tries is how many times a request is sent before its records are
	// dropped; the waits between double from FirstBackoff, up to
	// MaxBackoff (a Retry-After the collector sends is taken, up to
	// MaxBackoff too).
	Tries        = 5
	FirstBackoff = 250 * time.Millisecond
	MaxBackoff   = 4 * time.Second
	// Timeout bounds one request.
	Timeout = 10 * time.Second
)

// LogsPath is where an OTLP/HTTP receiver takes logs.
const LogsPath = "/v1/logs"

// Endpoint is the URL records are posted to for --otlp u: u itself when
// it has a path (OTEL_EXPORTER_OTLP_LOGS_ENDPOINT's rule), u with
// /v1/logs when it is only a scheme, host and port
// (OTEL_EXPORTER_OTLP_ENDPOINT's), so both http://collector:4318 and
// http://collector:4318/v1/logs work.
func Endpoint(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("--otlp %q is not an http:// or https:// URL: give the collector's OTLP/HTTP address, such as http://localhost:4318", u)
	}
	if p.Path == "" || p.Path == "/" {
		p.Path = LogsPath
	}
	return p.String(), nil
}

// Exporter posts records to an OTLP/HTTP collector, in the background:
// Add never waits for the collector, so a slow or absent collector slows
// no reader of the record (and no agent: agents write the record, never
// the exporter). What the collector does not take after Tries is dropped
// and said on Errs; the record still holds it.
type Exporter struct {
	URL    string       // the endpoint (Endpoint)
	Client *http.Client // http.DefaultClient when nil
	// Headers are sent with every request (authorization for the
	// collector: OTEL_EXPORTER_OTLP_HEADERS).
	Headers http.Header
	Errs    io.Writer // where failures are said

	mu      sync.Mutex
	queue   []LogRecord
	dropped int // records dropped since last said
	wake    chan struct{}
	done    chan struct{}
	stop    chan struct{}
	start   sync.Once
	sleep   func(context.Context, time.Duration) bool
	limit   int // MaxQueued when 0 (tests make it small)
}

// Check posts an empty request, so a wrong URL or a collector that is not
// there is an error before anything is watched, saying what to check.
func (x *Exporter) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	_, err := x.post(ctx, Encode(nil))
	return err
}

// Add queues records to send, at once; past MaxQueued they are dropped
// and counted.
func (x *Exporter) Add(records []LogRecord) {
	x.start.Do(x.run)
	x.mu.Lock()
	if x.limit == 0 {
		x.limit = MaxQueued
	}
	room := x.limit - len(x.queue)
	if room < len(records) {
		x.dropped += len(records) - max(room, 0)
		records = records[:max(room, 0)]
	}
	x.queue = append(x.queue, records...)
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// Close sends what is queued, waiting until ctx is done at the most, and
// stops; it returns how many records were left unsent.
func (x *Exporter) Close(ctx context.Context) int {
	x.start.Do(x.run)
	close(x.stop)
	select {
	case <-x.done:
	case <-ctx.Done():
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.queue)
}

func (x *Exporter) run() {
	x.wake = make(chan struct{}, 1)
	x.done = make(chan struct{})
	x.stop = make(chan struct{})
	if x.sleep == nil {
		x.sleep = sleepCtx
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(x.done)
		defer cancel()
		for {
			x.send(ctx)
			select {
			case <-x.wake:
			case <-x.stop:
				x.send(ctx)
				return
			}
		}
	}()
}

// send sends the queue, MaxBatch records a request, until it is empty or
// a request fails for good.
func (x *Exporter) send(ctx context.Context) {
	for {
		x.mu.Lock()
		if x.dropped > 0 {
			fmt.Fprintf(x.Errs, "litterbox watch: %d events were not sent to %s: more than %d waited for a collector that did not take them; the record still has them (`litterbox watch --since` sends them again)\n", x.dropped, x.URL, x.limit)
			x.dropped = 0
		}
		batch := x.queue[:min(len(x.queue), MaxBatch)]
		x.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		err := x.deliver(ctx, Encode(batch))
		x.mu.Lock()
		x.queue = x.queue[len(batch):]
		x.mu.Unlock()
		if err != nil {
			fmt.Fprintf(x.Errs, "litterbox watch: %d events were not sent: %v; the record still has them (`litterbox watch --since` sends them again)\n", len(batch), err)
		}
	}
}

// deliver posts body, trying again (Tries in all) when the collector is
// not reached or says to (429, 502, 503, 504).
func (x *Exporter) deliver(ctx context.Context, body []byte) error {
	wait := FirstBackoff
	var err error
	for try := 1; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, Timeout)
		var after time.Duration
		after, err = x.post(rctx, body)
		cancel()
		var r retryable
		if err == nil || !errors.As(err, &r) || try == Tries {
			break
		}
		if after > 0 {
			wait = after
		}
		if !x.sleep(ctx, min(wait, MaxBackoff)) {
			break
		}
		wait *= 2
	}
	if err != nil {
		return fmt.Errorf("%w (after %d tries)", err, Tries)
	}
	return nil
}

// retryable is a failure worth trying again.
type retryable struct{ error }

func (r retryable) Unwrap() error { return r.error }

// post sends one request; after is a Retry-After the collector asked for.
func (x *Exporter) post(ctx context.Context, body []byte) (after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, vs := range x.Headers {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	c := x.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, retryable{fmt.Errorf("the OpenTelemetry collector at %s does not answer (%v): start it, or check the URL (OTLP/HTTP, such as http://localhost:4318)", x.URL, unwrapURL(err))}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusOK:
		return 0, x.partial(answer)
	case resp.StatusCode == http.StatusNotFound:
		return 0, fmt.Errorf("%s answered 404 Not Found: an OTLP/HTTP receiver takes logs at %s (such as http://localhost:4318%s)", x.URL, LogsPath, LogsPath)
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusBadGateway ||
		resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return time.Duration(secs) * time.Second, retryable{fmt.Errorf("the collector at %s answered %s", x.URL, resp.Status)}
	default:
		return 0, fmt.Errorf("the collector at %s refused the records: %s %s", x.URL, resp.Status, oneLine(answer))
	}
}

// partial reads an OTLP answer's partialSuccess: records the collector
// took the request of but rejected.
func (x *Exporter) partial(answer []byte) error {
	var a struct {
		PartialSuccess struct {
			RejectedLogRecords json.Number `json:"rejectedLogRecords"`
			ErrorMessage       string      `json:"errorMessage"`
		} `json:"partialSuccess"`
	}
	if json.Unmarshal(answer, &a) != nil {
		return nil
	}
	if n, _ := a.PartialSuccess.RejectedLogRecords.Int64(); n > 0 {
		return fmt.Errorf("the collector at %s rejected %d of them: %s", x.URL, n, oneLine([]byte(a.PartialSuccess.ErrorMessage)))
	}
	return nil
}

// unwrapURL is the cause of a client error without the method and URL
// *url.Error repeats.
func unwrapURL(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}

// oneLine is a collector's answer cut to a line of 200 bytes at most.
func oneLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Headers parses OTEL_EXPORTER_OTLP_HEADERS (key=value pairs, comma
// separated, values URL-encoded), as OpenTelemetry's exporters read it.
func Headers(s string) (http.Header, error) {
	h := http.Header{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, errors.New("OTEL_EXPORTER_OTLP_HEADERS holds an entry that is not key=value: give it as key1=value1,key2=value2")
		}
		if dv, err := url.QueryUnescape(strings.TrimSpace(v)); err == nil {
			v = dv
		}
		h.Add(k, strings.TrimSpace(v))
	}
	return h, nil
}
