package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
)

// The copy path's benchmarks: bytes from a server's TCP socket to a
// client's through the gateway's carry (a tunnel) and copyBody (a plain
// HTTP body of known length), on the loopback. The server writes and the
// client reads through buffers of their own, made once, so allocs/op is the
// gateway's and the sockets': the same at 1 MiB and 64 MiB when nothing is
// allocated per chunk. Run with
//
//	go test -run '^$' -bench 'Carry|CopyBody' -benchmem ./gateway
func BenchmarkCarry(b *testing.B) {
	for _, size := range []int64{1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			benchCopy(b, size, func(client, up net.Conn) {
				carry(client, up, nil, nil)
			})
		})
	}
}

func BenchmarkCopyBody(b *testing.B) {
	for _, size := range []int64{1 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			benchCopy(b, size, func(client, up net.Conn) {
				// The response's header went through the reader, which
				// holds the body's first bytes too.
				br := bufio.NewReader(up)
				if _, err := br.Peek(1); err != nil {
					b.Error(err)
					return
				}
				if n, err := copyBody(&countWriter{w: client}, client, up, br, size); err != nil || n != size {
					b.Errorf("copied %d of %d: %v", n, size, err)
				}
				client.Close()
			})
		})
	}
}

// benchCopy times size bytes from a server through gw, which is handed the
// client's connection and the server's, to the client, once per op.
func benchCopy(b *testing.B, size int64, gw func(client, up net.Conn)) {
	srv := listen(b)
	front := listen(b)
	go func() {
		out := make([]byte, 256<<10)
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			for left := size; left > 0; {
				n, err := c.Write(out[:min(left, int64(len(out)))])
				if err != nil {
					break
				}
				left -= int64(n)
			}
			c.Close()
		}
	}()
	go func() {
		for {
			client, err := front.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", srv.Addr().String())
			if err != nil {
				b.Error(err)
				client.Close()
				return
			}
			gw(client, up)
			up.Close()
			client.Close()
		}
	}()
	in := make([]byte, 256<<10)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", front.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		var got int64
		for {
			n, err := c.Read(in)
			got += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
		if got != size {
			b.Fatalf("the client got %d bytes of %d", got, size)
		}
	}
}

func listen(b *testing.B) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}
