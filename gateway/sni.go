package gateway

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// maxHello bounds the ClientHello the gateway reads before it decides: the
// client's buffered reader must be at least this large.
const maxHello = 64 << 10

// Hello is what the gateway learns from a TLS ClientHello.
type Hello struct {
	// ServerName is the SNI host name, lower-cased, without a trailing
	// dot; "" when the ClientHello carries none.
	ServerName string
	// ECH is set when the ClientHello carries an encrypted ClientHello
	// (or the older encrypted SNI): its real server name is hidden.
	ECH bool
}

// errNotTLS says the first bytes of a tunnel are not a TLS handshake.
var errNotTLS = errors.New("not TLS")

// PeekClientHello reads the TLS ClientHello at the start of br without
// consuming it: what it peeked stays buffered, to be forwarded once the
// tunnel is judged. It returns errNotTLS when the stream does not start
// with a TLS handshake record. br's buffer must hold maxHello bytes.
func PeekClientHello(br *bufio.Reader) (Hello, error) {
	head, err := br.Peek(1)
	if err != nil {
		return Hello{}, err
	}
	if head[0] != 0x16 {
		return Hello{}, errNotTLS
	}
	// Gather the handshake message from as many records as it spans.
	var msg []byte
	off := 0
	for {
		hdr, err := br.Peek(off + 5)
		if err != nil {
			return Hello{}, fmt.Errorf("read a TLS record header: %w", err)
		}
		hdr = hdr[off:]
		if hdr[0] != 0x16 {
			return Hello{}, errors.New("the TLS handshake is interrupted by another record type")
		}
		if hdr[1] != 3 {
			if off == 0 {
				return Hello{}, errNotTLS
			}
			return Hello{}, errors.New("a TLS record of another version")
		}
		n := int(binary.BigEndian.Uint16(hdr[3:5]))
		if n == 0 || n > 1<<14 {
			return Hello{}, fmt.Errorf("a TLS record of %d bytes", n)
		}
		if off+5+n > maxHello {
			return Hello{}, fmt.Errorf("a ClientHello larger than %d bytes", maxHello)
		}
		rec, err := br.Peek(off + 5 + n)
		if err != nil {
			return Hello{}, fmt.Errorf("read a TLS record: %w", err)
		}
		msg = append(msg, rec[off+5:]...)
		off += 5 + n
		if len(msg) >= 4 {
			if msg[0] != 1 {
				return Hello{}, fmt.Errorf("the first TLS handshake message is of type %d, not a ClientHello", msg[0])
			}
			want := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
			if want > maxHello {
				return Hello{}, fmt.Errorf("a ClientHello larger than %d bytes", maxHello)
			}
			if len(msg) >= want {
				return ParseClientHello(msg[4:want])
			}
		}
	}
}

// ParseClientHello reads the body of a ClientHello handshake message (after
// its 4-byte header).
func ParseClientHello(b []byte) (Hello, error) {
	r := reader{b: b}
	r.skip(2 + 32)       // legacy_version, random
	r.skip(int(r.u8()))  // legacy_session_id
	r.skip(int(r.u16())) // cipher_suites
	r.skip(int(r.u8()))  // legacy_compression_methods
	if r.err != nil {
		return Hello{}, fmt.Errorf("a truncated ClientHello: %w", r.err)
	}
	var h Hello
	if r.empty() {
		return h, nil // no extensions at all
	}
	exts := reader{b: r.bytes(int(r.u16()))}
	if r.err != nil || !r.empty() {
		return Hello{}, errors.New("a ClientHello whose extensions do not fill it")
	}
	seen := map[uint16]bool{}
	for !exts.empty() {
		typ := exts.u16()
		data := exts.bytes(int(exts.u16()))
		if exts.err != nil {
			return Hello{}, errors.New("a truncated ClientHello extension")
		}
		if seen[typ] {
			return Hello{}, fmt.Errorf("a ClientHello with extension %d twice", typ)
		}
		seen[typ] = true
		switch typ {
		case 0: // server_name
			name, err := parseServerName(data)
			if err != nil {
				return Hello{}, err
			}
			h.ServerName = name
		case 0xfe0d, 0xffce: // encrypted_client_hello, and the draft encrypted_server_name
			h.ECH = true
		}
	}
	return h, nil
}

func parseServerName(data []byte) (string, error) {
	r := reader{b: data}
	list := reader{b: r.bytes(int(r.u16()))}
	if r.err != nil || !r.empty() {
		return "", errors.New("a malformed server_name extension")
	}
	name := ""
	for !list.empty() {
		typ := list.u8()
		v := list.bytes(int(list.u16()))
		if list.err != nil {
			return "", errors.New("a malformed server_name extension")
		}
		if typ != 0 {
			continue // not host_name: no other type is defined
		}
		if name != "" {
			return "", errors.New("a ClientHello naming two servers")
		}
		n := strings.TrimSuffix(strings.ToLower(string(v)), ".")
		if err := policy.CheckName(n); err != nil {
			return "", fmt.Errorf("the ClientHello's server name: %w", err)
		}
		name = n
	}
	return name, nil
}

// reader reads big-endian fields off a byte slice; after the first short
// read every read returns zero and err is set.
type reader struct {
	b   []byte
	err error
}

func (r *reader) empty() bool { return r.err == nil && len(r.b) == 0 }

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = errors.New("short")
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) skip(n int) { r.bytes(n) }

func (r *reader) u8() uint8 {
	v := r.bytes(1)
	if v == nil {
		return 0
	}
	return v[0]
}

func (r *reader) u16() uint16 {
	v := r.bytes(2)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint16(v)
}
