package scanner

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"io"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// Main is the scanner program: args are what follows the program's name,
// optionally led by "scan-internal" (the host runs `SCANNER scan-internal
// --root /src --since N --max-size N [--run]`: the word is the host's,
// from when litterbox itself served as the scanner). The request, then
// with --run the command to run, come on stdin, or in --in (base64) when
// small; the stream goes to stdout.
func Main(args []string, stdin io.Reader, stdout io.Writer) error {
	undumpable()
	if len(args) > 0 && args[0] == "scan-internal" {
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "probe" {
		return probeMain(args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "quiet" {
		return quietMain(args[1:], stdin, stdout)
	}
	if len(args) > 0 && (args[0] == "watch" || args[0] == "watch-serve") {
		return watchMain(args[0], args[1:])
	}
	fs := flag.NewFlagSet("litterbox-scan", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := wire.Options{}
	fs.StringVar(&o.Root, "root", "/src", "directory to scan")
	fs.Int64Var(&o.Since, "since", 0, "report entries changed at or after this time (unix ns)")
	fs.Int64Var(&o.MaxSize, "max-size", 0, "skip larger files")
	run := fs.Bool("run", false, "run the command described on stdin first")
	given := fs.String("in", "", "the input, base64, ahead of stdin")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("litterbox-scan: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("litterbox-scan: unexpected argument %q", fs.Arg(0))
	}
	if *given != "" {
		// An exec's stdin reaches it only once the engine has started
		// it and answered the client, milliseconds after it runs on a
		// loaded machine: the input in an argument lets the command run
		// and the scan be done meanwhile. Stdin still says when to stop
		// the command (its end), as it does after the input otherwise.
		data, err := base64.StdEncoding.DecodeString(*given)
		if err != nil {
			return fmt.Errorf("litterbox-scan: --in: %w", err)
		}
		stdin = io.MultiReader(bytes.NewReader(data), stdin)
	}
	in := bufio.NewReader(stdin)
	if err := wire.ReadRequest(in, &o); err != nil {
		return err
	}
	if *run {
		o.Run = in
	}
	w := bufio.NewWriterSize(stdout, 1<<16)
	err := Scan(w, o)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// watchMain runs `watch --root DIR`, which starts the change journal's
// watcher of DIR unless it runs, or `watch-serve --root DIR`, the watcher
// itself (journal.go).
func watchMain(cmd string, args []string) error {
	fs := flag.NewFlagSet("litterbox-scan "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	root := fs.String("root", "/src", "directory to watch")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("litterbox-scan: %w", err)
	}
	if cmd == "watch" {
		return watchStart(*root)
	}
	return watchServe(*root)
}
