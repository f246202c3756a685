package wire

import (
	"archive/tar"
	"bufio"
	"bytes"
	"reflect"
	"testing"
)

// FuzzReadScan: the host reads whatever the container sends (the agent
// runs as the scanner's user and can forge the stream) without panicking,
// and keeps no path that could leave /src or name .git.
func FuzzReadScan(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "a", Typeflag: tar.TypeReg, Size: 1, Mode: 0o755})
	tw.Write([]byte("x"))
	meta := (&Meta{Start: 1, Dirs: map[string][]DirEntry{"": {{"a", EntryFile}}}, Ignored: []string{"b"}}).Encode()
	tw.WriteHeader(&tar.Header{Name: MetaName, Typeflag: tar.TypeReg, Size: int64(len(meta))})
	tw.Write(meta)
	tw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Read(bytes.NewReader(data), nopBlobs{})
		if err != nil {
			return
		}
		defer sc.Release()
		for p := range sc.Files {
			if unsafePath(p, false) != "" && unsafePath(p, true) != "" {
				t.Errorf("kept unsafe path %q", p)
			}
		}
		for d := range sc.Meta.Dirs {
			if d != "" && unsafePath(d, false) != "" {
				t.Errorf("kept unsafe listing %q", d)
			}
		}
		for _, p := range append(sc.Meta.IgnoredChanged, sc.Meta.Ignored...) {
			if unsafePath(p, false) != "" {
				t.Errorf("kept unsafe path %q", p)
			}
		}
	})
}

// FuzzScanMeta: the meta format reads back what it wrote, byte for byte,
// and reads anything else without panicking.
func FuzzScanMeta(f *testing.F) {
	f.Add([]byte("S1\x00D\x00fa\x00d\xff\x00Kp\x00why\x00Ix\x00By\x00Rz\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMeta(data)
		if err != nil {
			return
		}
		again, err := parseMeta(m.Encode())
		if err != nil {
			t.Fatalf("re-reading %q: %v", m.Encode(), err)
		}
		if !reflect.DeepEqual(m, again) {
			t.Errorf("round trip changed the meta:\n%#v\n%#v", m, again)
		}
	})
}

// FuzzScanRequest: what the host sends, the scanner reads back exactly.
func FuzzScanRequest(f *testing.F) {
	f.Add("a b", "\xff\xfe", "-x", "*.o ")
	f.Fuzz(func(t *testing.T, full, p, list, excl string) {
		in := Options{Full: []string{full}, Paths: []string{p}, List: []string{list}, Tracked: []string{full}, Excludes: []string{excl}}
		for _, s := range []string{full, p, list, excl} {
			if bytes.IndexByte([]byte(s), 0) >= 0 {
				return // no name holds a NUL
			}
		}
		var out Options
		if err := ReadRequest(bufio.NewReader(bytes.NewReader(EncodeRequest(in))), &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Errorf("sent %#v, read %#v", in, out)
		}
	})
}
