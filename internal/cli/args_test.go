package cli

import (
	"context"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Arguments are bytes: a path or a message that is not UTF-8 reaches the
// command as given. kong's own string decoder goes through JSON and turned
// such bytes into U+FFFD, so `litterbox cp 'box:bad\xffname' .` looked for
// a file that does not exist.
func TestArgumentsKeepTheirBytes(t *testing.T) {
	var c cli
	parser, err := newParser(&c, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse([]string{"cp", "box:dir/bad\xffname\xe9", "out/\xfe"}); err != nil {
		t.Fatal(err)
	}
	if c.Cp.Src != "box:dir/bad\xffname\xe9" || c.Cp.Dst != "out/\xfe" {
		t.Errorf("cp got %q %q", c.Cp.Src, c.Cp.Dst)
	}
	c = cli{}
	if _, err := parser.Parse([]string{"snapshot", "box", "-m", "caf\xe9"}); err != nil {
		t.Fatal(err)
	}
	if c.Snapshot.Message != "caf\xe9" {
		t.Errorf("snapshot -m got %q", c.Snapshot.Message)
	}
}

// A bad argument the service refuses (a path, a count out of its range) is
// a usage error, as a bad flag is: exit 2, not the generic 1.
func TestBadArgumentsAreUsageErrors(t *testing.T) {
	_, pathErr := sandbox.ContainerPath("../../etc/passwd")
	engine, err := docker.New(docker.Options{Runner: runner.Exec{}})
	if err != nil {
		t.Fatal(err)
	}
	_, poolErr := sandbox.New(engine, runner.Exec{}, nil, api.Options{}).FillPool(context.Background(), nil, 17)
	for _, err := range []error{pathErr, poolErr} {
		if err == nil {
			t.Fatal("no error")
		}
		if got := exitCode(err, exitFailed); got != exitUsage {
			t.Errorf("%v: exit code %d, want %d", err, got, exitUsage)
		}
	}
}

// A command's --help shows its own arguments and flags first; the global
// flags follow on a line that names them and says where they are
// described, as gh lists inherited flags after a command's own.
func TestCommandHelpShowsItsOwnFlagsFirst(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"create", "--help"}, &out, io.Discard); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	help := out.String()
	own, global := strings.Index(help, "--from-branch"), strings.Index(help, "Global flags")
	if own < 0 || global < own {
		t.Fatalf("create's flags do not come before the global flags:\n%s", help)
	}
	if i := strings.Index(help, "--engine"); i < global {
		t.Errorf("--engine is shown before the global flags line:\n%s", help)
	}
	if !strings.Contains(help[global:], "litterbox --help") {
		t.Errorf("the global flags line does not say where they are described:\n%s", help)
	}
	if n := strings.Count(help, "\n"); n > 40 {
		t.Errorf("create --help is %d lines:\n%s", n, help)
	}
}

// The sandboxes a command names are those the idle sweep leaves to it (as
// slugs), whatever the command; a command that names none leaves none.
func TestNamedSandboxes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "My_Box", "--", "true"}, "my-box"},
		{[]string{"watch", "a", "b"}, "a b"},
		{[]string{"delete", "--force", "box"}, "box"},
		{[]string{"delete", "a", "B"}, "a b"},
		{[]string{"list"}, ""},
	} {
		var c cli
		parser, err := newParser(&c, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		kctx, err := parser.Parse(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(namedSandboxes(kctx), " "); got != tc.want {
			t.Errorf("%q names %q, want %q", tc.args, got, tc.want)
		}
	}
}

// A command line that starts with a command's name is parsed by that
// command's grammar alone (parseOne): it must come out as the whole
// grammar parses it, or not at all (nil), for the whole grammar to parse
// it and word its error or help.
func TestParseOneAgreesWithTheWholeGrammar(t *testing.T) {
	for _, args := range [][]string{
		{"list"}, {"ls", "--json"}, {"list", "--all-repos", "--log-level", "debug"},
		{"rm", "--force", "box"}, {"exec", "box", "--", "sh", "-c", "true"},
		{"create", "box", "--from", "main"}, {"mcp", "--pool", "2"}, {"vm"}, {"version"},
		{"service", "start", "box", "web"}, {"net", "box", "allow", "example.com"},
		{"list", "--bogus"}, {"lis"}, {"create"}, {"--log-level", "debug", "list"},
	} {
		var one, whole cli
		kctx := parseOne(&one, args, io.Discard, io.Discard)
		parser, err := newParser(&whole, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		wctx, err := parser.Parse(args)
		switch {
		case kctx == nil && err == nil && !strings.HasPrefix(args[0], "-"):
			t.Errorf("%q: parsed by the whole grammar only", args)
		case kctx == nil:
		case err != nil:
			t.Errorf("%q: parsed alone, refused by the whole grammar: %v", args, err)
		case kctx.Command() != wctx.Command() || !reflect.DeepEqual(globalFlags(one), globalFlags(whole)) ||
			!reflect.DeepEqual(kctx.Selected().Target.Interface(), wctx.Selected().Target.Interface()):
			t.Errorf("%q: alone %q %+v %+v, whole %q %+v %+v", args, kctx.Command(), globalFlags(one), kctx.Selected().Target,
				wctx.Command(), globalFlags(whole), wctx.Selected().Target)
		}
	}
	// Help is the whole grammar's.
	if parseOne(&cli{}, []string{"list", "--help"}, io.Discard, io.Discard) != nil {
		t.Error("list --help parsed alone")
	}
}

// Every command's name and alias finds its command's field, as kong names
// them.
func TestOtherCommandsKnowsEveryName(t *testing.T) {
	parser, err := newParser(&cli{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range parser.Model.Children {
		for _, name := range append([]string{n.Name}, n.Aliases...) {
			others, ok := otherCommands(name)
			if !ok || len(others) != len(parser.Model.Children)-1 {
				t.Errorf("%s: found %v, %d other commands of %d", name, ok, len(others), len(parser.Model.Children))
			}
		}
	}
}

// globalFlags is c without its commands (the grammar of one command sets
// no other's defaults: they never run).
func globalFlags(c cli) cli {
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		if _, cmd := v.Type().Field(i).Tag.Lookup("cmd"); cmd {
			v.Field(i).SetZero()
		}
	}
	return c
}
