package scanner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// refusalsRun runs command with the refusals file at path, owned (as the
// run is told) by uid.
func refusalsRun(t *testing.T, command, path string, uid int) *wire.RunResult {
	t.Helper()
	spec, err := json.Marshal(wire.RunSpec{Command: command, Workdir: "/", Timeout: 10e9, Cap: 1000, Refusals: path, RefusalsUID: uid})
	if err != nil {
		t.Fatal(err)
	}
	res, _, _ := runSpec(t, string(spec))
	return res
}

// A run reads the whole lines its command's refusals added, not those
// before it; a file the gateway started again is read from its start.
func TestRunReadsItsRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refused.log")
	if err := os.WriteFile(path, []byte("{\"host\":\"before\"}\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	res := refusalsRun(t, `printf '{"host":"a"}\n{"host":"b"}\n{"host":"cut' >>`+path, path, os.Getuid())
	if !res.RefusalsRead || res.Refusals != "{\"host\":\"a\"}\n{\"host\":\"b\"}\n" {
		t.Errorf("read %v: %q, want the two whole lines added", res.RefusalsRead, res.Refusals)
	}
	res = refusalsRun(t, `printf '{"host":"c"}\n' >`+path, path, os.Getuid())
	if !res.RefusalsRead || res.Refusals != "{\"host\":\"c\"}\n" {
		t.Errorf("after a restart of the file: %v %q", res.RefusalsRead, res.Refusals)
	}
	res = refusalsRun(t, "true", path, os.Getuid())
	if !res.RefusalsRead || res.Refusals != "" {
		t.Errorf("a command that was refused nothing read %v %q", res.RefusalsRead, res.Refusals)
	}
}

// Only the gateway's file is read: one of another owner, one others may
// write, a link, and a file put in its place during the command are not,
// and the host is left to ask the gateway.
func TestRunRefusalsOnlyFromTheGateway(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "refused.log")
	other := filepath.Join(dir, "other")
	write := func(name string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(name, nil, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
	}
	forge := `printf '{"host":"forged"}\n' >>` + path
	for _, c := range []struct {
		name  string
		setup func()
		cmd   string
		uid   int
	}{
		{"another owner", func() { write(path, 0o640) }, forge, os.Getuid() + 1},
		{"group-writable", func() { write(path, 0o660) }, forge, os.Getuid()},
		{"a link", func() {
			write(other, 0o640)
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}, `printf '{"host":"forged"}\n' >>` + other, os.Getuid()},
		{"replaced during the command", func() { write(path, 0o640) },
			`printf '{"host":"forged"}\n' >` + other + ` && mv ` + other + ` ` + path, os.Getuid()},
		{"none", func() {}, "true", os.Getuid()},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(path)
			os.Remove(other)
			c.setup()
			if res := refusalsRun(t, c.cmd, path, c.uid); res.RefusalsRead || res.Refusals != "" {
				t.Errorf("read %v %q", res.RefusalsRead, res.Refusals)
			}
		})
	}
}
