package gateway

import (
	"bufio"
	"io"
	"net"
	"sync"
)

// The gateway's copy path. A tunnel the gateway does not read, and the body
// of a plain HTTP response of known length, go from socket to socket with
// io.Copy between the two *net.TCPConn themselves, never wrapped (no
// counting reader or writer, no io.LimitedReader but the one the kernel's
// splice understands): on Linux the bytes then pass through a pipe in the
// kernel (splice), not through the gateway's memory, and nothing is
// allocated per chunk. What a bufio.Reader already holds of them (the
// request's or the response's header was read through it) is written
// first. BenchmarkCarry and BenchmarkCopyBody measure it (allocs/op).

// carry carries bytes both ways between the client and the server (up)
// until both directions end, closing each direction's write side when its
// reader ends (so a half-closed connection works): the server's from the
// start (a protocol where the server speaks first works); the client's once
// judge (nil: none) lets them through, what br (nil: none) holds of them
// first. When judge refuses, both connections close. It returns the bytes
// sent to the server and received from it.
func carry(client, up net.Conn, br *bufio.Reader, judge func() (refused bool)) (sent, received int64, refused bool) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		received, _ = io.Copy(client, up)
		closeWrite(client)
	}()
	if judge != nil && judge() {
		up.Close()
		client.Close()
		wg.Wait()
		return 0, received, true
	}
	var err error
	if br != nil {
		sent, err = writeBuffered(up, br, br.Buffered())
	}
	if err == nil {
		m, _ := io.Copy(up, client)
		sent += m
	}
	closeWrite(up)
	wg.Wait()
	return sent, received, false
}

// Pipe carries bytes both ways between a and b until both directions end
// (carry, with nothing to judge), and returns the bytes copied from a to b
// and from b to a.
func Pipe(a, b net.Conn) (ab, ba int64) {
	ab, ba, _ = carry(a, b, nil, nil)
	return ab, ba
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// writeBuffered writes to w at most n of the bytes br holds, and drops
// those written from br.
func writeBuffered(w io.Writer, br *bufio.Reader, n int) (int64, error) {
	n = min(n, br.Buffered())
	if n == 0 {
		return 0, nil
	}
	b, _ := br.Peek(n)
	m, err := w.Write(b)
	_, _ = br.Discard(m)
	return int64(m), err
}

// copyBody copies n bytes of a body to the client: those br holds, then
// the rest from the server's socket, which the kernel splices into the
// client's. It counts them on counted.
func copyBody(counted *countWriter, client, server net.Conn, br *bufio.Reader, n int64) (int64, error) {
	done, err := writeBuffered(counted, br, int(min(n, int64(br.Buffered()))))
	if err != nil {
		return done, err
	}
	m, err := io.Copy(client, &io.LimitedReader{R: server, N: n - done})
	counted.n += m
	return done + m, err
}

// countWriter counts what passes.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// bodyBuffers are the buffers the bodies the kernel cannot splice (chunked,
// or of unknown length) are copied through: large, so that a big download
// costs few system calls (io.Copy's own are 32 KiB), and pooled, so that
// none is allocated per request.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// ReadFrom copies r through a large buffer.
func (c *countWriter) ReadFrom(r io.Reader) (int64, error) {
	b := bodyBuffers.Get().(*[]byte)
	defer bodyBuffers.Put(b)
	return io.CopyBuffer(struct{ io.Writer }{c}, r, *b)
}
