//go:build !linux

package scanner

import "errors"

// The watcher runs only in sandboxes, which run Linux.

var errNoWatch = errors.New("litterbox-scan: the change journal runs on Linux only")

func watchStart(string) error { return errNoWatch }

func watchServe(string) error { return errNoWatch }
