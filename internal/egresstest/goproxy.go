package egresstest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// GoProxy is a Go module proxy (the GOPROXY protocol: /MODULE/@v/list,
// .info, .mod, .zip) of n small generated modules, example.test/mNN at
// v1.0.0, each a package of one file. It logs every request it answers.
type GoProxy struct {
	// Modules are the module paths, for a go.mod's require lines.
	Modules []string
	mu      sync.Mutex
	log     []string
	files   map[string][]byte
}

// NewGoProxy makes the modules of a proxy.
func NewGoProxy(n int) *GoProxy {
	p := &GoProxy{files: map[string][]byte{}}
	const v = "v1.0.0"
	for i := 1; i <= n; i++ {
		mod := fmt.Sprintf("example.test/m%02d", i)
		pkg := fmt.Sprintf("m%02d", i)
		gomod := []byte("module " + mod + "\n\ngo 1.21\n")
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for name, body := range map[string]string{
			"go.mod":       string(gomod),
			pkg + ".go":    fmt.Sprintf("// Package %s is a test module of the Go proxy.\npackage %s\n\n// N is its number.\nconst N = %d\n", pkg, pkg, i),
			"LICENSE":      "test module, no rights reserved\n",
			"data/pad.txt": strings.Repeat(pkg+" pads the module to the size of a small real one\n", 400),
		} {
			w, _ := zw.Create(mod + "@" + v + "/" + name)
			_, _ = w.Write([]byte(body))
		}
		_ = zw.Close()
		base := "/" + mod + "/@v/"
		p.files[base+"list"] = []byte(v + "\n")
		p.files[base+v+".info"] = fmt.Appendf(nil, `{"Version":%q,"Time":%q}`, v, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339))
		p.files[base+v+".mod"] = gomod
		p.files[base+v+".zip"] = buf.Bytes()
		p.Modules = append(p.Modules, mod)
	}
	return p
}

// GoMod is a go.mod of module example.test/app requiring every module.
func (p *GoProxy) GoMod() string {
	var b strings.Builder
	b.WriteString("module example.test/app\n\ngo 1.21\n\nrequire (\n")
	for _, m := range p.Modules {
		fmt.Fprintf(&b, "\t%s v1.0.0\n", m)
	}
	b.WriteString(")\n")
	return b.String()
}

// Handler serves the proxy at prefix (as "/goproxy/"); logPath, when set,
// gets a line per request.
func (p *GoProxy) Handler(prefix, logPath string) http.Handler {
	return http.StripPrefix(strings.TrimSuffix(prefix, "/"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.log = append(p.log, r.URL.Path)
		if logPath != "" {
			if f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintln(f, r.Method, r.URL.Path)
				f.Close()
			}
		}
		p.mu.Unlock()
		body, ok := p.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
}

// Requests is how many requests the proxy has answered.
func (p *GoProxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.log)
}
