package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The sandbox's resolver (127.0.0.1:53 in the sandbox, relayed here) answers
// every query REFUSED and records it: proxy clients resolve nothing
// themselves (the gateway resolves the names they ask for), so a query means
// a client that ignores the proxy, or a tunnel through DNS. Answering
// nothing leaves a DNS tunnel nothing to carry data back in; the query
// itself reaches no server.

// Question is the question of a DNS query.
type Question struct {
	ID    uint16
	Flags uint16
	Name  string // as it appeared, dot-separated, without the root dot
	Type  uint16
	Class uint16
	// end is where the question ends in the message.
	end int
}

// ParseQuery reads a DNS query's header and its one question. A message
// that is not a standard query with one question is refused with an error.
func ParseQuery(m []byte) (Question, error) {
	if len(m) < 12 {
		return Question{}, errors.New("a DNS message shorter than its header")
	}
	q := Question{ID: binary.BigEndian.Uint16(m), Flags: binary.BigEndian.Uint16(m[2:])}
	if q.Flags&0x8000 != 0 {
		return q, errors.New("a DNS response, not a query")
	}
	if n := binary.BigEndian.Uint16(m[4:]); n != 1 {
		return q, fmt.Errorf("a DNS query with %d questions", n)
	}
	var labels []string
	i := 12
	for {
		if i >= len(m) {
			return q, errors.New("a truncated DNS question")
		}
		n := int(m[i])
		i++
		if n == 0 {
			break
		}
		if n > 63 {
			return q, errors.New("a DNS question with a compressed or oversized name")
		}
		if i+n > len(m) {
			return q, errors.New("a truncated DNS question")
		}
		labels = append(labels, string(m[i:i+n]))
		i += n
	}
	if i+4 > len(m) {
		return q, errors.New("a truncated DNS question")
	}
	q.Name = strings.Join(labels, ".")
	if len(q.Name) > 253 {
		return q, errors.New("a DNS name longer than 253 characters")
	}
	q.Type = binary.BigEndian.Uint16(m[i:])
	q.Class = binary.BigEndian.Uint16(m[i+2:])
	q.end = i + 4
	return q, nil
}

// Refusal is the REFUSED answer to the query m whose question is q: the
// header with QR set, the opcode and RD kept, RCODE 5, and the question
// echoed.
func Refusal(m []byte, q Question) []byte {
	out := make([]byte, q.end)
	copy(out, m[:q.end])
	flags := uint16(0x8000) | q.Flags&0x7900 | 5 // QR, opcode and RD kept, REFUSED
	binary.BigEndian.PutUint16(out[2:], flags)
	binary.BigEndian.PutUint16(out[4:], 1)
	binary.BigEndian.PutUint16(out[6:], 0)
	binary.BigEndian.PutUint16(out[8:], 0)
	binary.BigEndian.PutUint16(out[10:], 0)
	return out
}

// typeNames are the query types a record names; others are TYPEn.
var typeNames = map[uint16]string{1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV", 64: "SVCB", 65: "HTTPS", 255: "ANY"}

func typeName(t uint16) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("TYPE%d", t)
}

// printableName keeps a query's name fit for a log line: bytes outside
// printable ASCII are escaped as \DDD, as DNS presentation format does.
func printableName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '\\' {
			fmt.Fprintf(&b, "\\%03d", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
