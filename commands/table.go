package commands

import (
	"bufio"
	"io"
	"text/tabwriter"
)

// table is a table for w, its columns two spaces apart, that reaches w in
// one write when flushed: a tabwriter alone writes each cell and each run
// of padding on its own, about ten system calls a row (200 for a list of
// 20 sandboxes, after the engine has answered).
type table struct {
	*tabwriter.Writer
	buf *bufio.Writer
}

func newTable(w io.Writer) *table {
	buf := bufio.NewWriter(w)
	return &table{Writer: tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0), buf: buf}
}

// Flush writes the table out.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.buf.Flush()
}
