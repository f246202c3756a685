// Package e2e is litterbox's end-to-end suite: testscript runs the scripts
// of testdata/script (at the module's root) against real engines and git,
// with the litterbox binary built from internal/cli. Its script commands and
// conditions are listed in scriptcmds_test.go, their code in a file per
// concern. The tests of the docs (docs/cli.md, docs/connect.md) and of the
// release build are here too. Everything is in _test.go files: nothing here
// is part of the program.
package e2e
