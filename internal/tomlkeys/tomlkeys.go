// Package tomlkeys finds where a TOML document sets each key, for messages
// that name a file and a line: the configuration's and the secrets'.
package tomlkeys

import (
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Lines maps each key of a TOML document, by its dotted name, to the line
// it is at (a table's: its header's; each table a dotted key or header
// opens: the first line that opens it). The document has already been
// decoded, so it parses; what does not parse is left out.
func Lines(data []byte) map[string]int {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	var walk func(prefix []string, n *unstable.Node)
	walk = func(prefix []string, n *unstable.Node) {
		// A key/value's first child is its value, the rest its dotted key.
		it := n.Key()
		key := slices.Clone(prefix)
		line := 0
		for it.Next() {
			k := it.Node()
			key = append(key, string(k.Data))
			if line == 0 {
				line = p.Shape(k.Raw).Start.Line
			}
			if _, ok := lines[strings.Join(key, ".")]; !ok {
				lines[strings.Join(key, ".")] = line
			}
		}
		lines[strings.Join(key, ".")] = line
		if v := n.Value(); v != nil && v.Kind == unstable.InlineTable {
			kids := v.Children()
			for kids.Next() {
				walk(key, kids.Node())
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = table[:0]
			it := e.Key()
			line := 0
			for it.Next() {
				table = append(table, string(it.Node().Data))
				if line == 0 {
					line = p.Shape(it.Node().Raw).Start.Line
				}
				if k := strings.Join(table, "."); lines[k] == 0 {
					lines[k] = line
				}
			}
		case unstable.KeyValue:
			walk(table, e)
		}
	}
	return lines
}
