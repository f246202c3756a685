package harnessconf

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlDoc is where a TOML document sets things: the text is edited in
// place, so the user's comments, order and layout stay.
type tomlDoc struct {
	src []byte
	// values is the decoded document.
	values map[string]any
	// kvs are its key/values, by full dotted path.
	kvs []tomlKV
	// tables are its [table] headers (not [[array]] ones).
	tables []tomlTable
	// rootEnd is where a new top-level key goes: after the last one, or
	// at the start.
	rootEnd int
	// firstHeader is the offset of the first header's line, -1 if none.
	firstHeader int
}

type tomlKV struct {
	path []string
	// value is the byte range of the value's text.
	value [2]int
}

type tomlTable struct {
	path []string
	// end is where a new key of the table goes: after the line of its
	// last key, or of its header.
	end int
}

func parseTOML(src []byte) (*tomlDoc, error) {
	d := &tomlDoc{src: src, values: map[string]any{}, firstHeader: -1}
	if err := toml.Unmarshal(src, &d.values); err != nil {
		return nil, err
	}
	var p unstable.Parser
	p.Reset(src)
	var table []string
	inArray := false
	section := -1 // index into d.tables of the current [table], -1 for root or an array table
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyPath(e.Key())
			inArray = e.Kind == unstable.ArrayTable
			first := e.Key()
			first.Next()
			start := lineStart(src, int(first.Node().Raw.Offset))
			if d.firstHeader < 0 {
				d.firstHeader = start
			}
			section = -1
			if !inArray {
				d.tables = append(d.tables, tomlTable{path: table, end: lineEnd(src, int(first.Node().Raw.Offset))})
				section = len(d.tables) - 1
			}
		case unstable.KeyValue:
			full := append(slices.Clone(table), keyPath(e.Key())...)
			keys := e.Key()
			keys.Next()
			afterKey := int(keys.Node().Raw.Offset)
			for keys.Next() {
				afterKey = int(keys.Node().Raw.Offset + keys.Node().Raw.Length)
			}
			start := afterKey + bytes.IndexByte(src[afterKey:], '=') + 1
			for start < len(src) && (src[start] == ' ' || src[start] == '\t') {
				start++
			}
			end := int(e.Raw.Offset + e.Raw.Length)
			if !inArray {
				d.kvs = append(d.kvs, tomlKV{path: full, value: [2]int{start, end}})
			}
			switch {
			case section >= 0:
				d.tables[section].end = lineEnd(src, end)
			case len(table) == 0:
				d.rootEnd = lineEnd(src, end)
			}
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	return d, nil
}

func keyPath(it unstable.Iterator) []string {
	var path []string
	for it.Next() {
		path = append(path, string(it.Node().Data))
	}
	return path
}

func lineStart(src []byte, i int) int {
	return bytes.LastIndexByte(src[:i], '\n') + 1
}

// lineEnd is the offset just past the newline ending the line of i (a
// trailing comment stays on its line), or the end of src.
func lineEnd(src []byte, i int) int {
	if n := bytes.IndexByte(src[i:], '\n'); n >= 0 {
		return i + n + 1
	}
	return len(src)
}

// lookup finds path in the decoded document.
func (d *tomlDoc) lookup(path []string) (any, bool) {
	var v any = d.values
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// editTOML applies settings to the TOML document data (empty: a new file),
// editing its text, and returns the new document and what changed.
func editTOML(data []byte, settings []setting) ([]byte, []string, error) {
	src := slices.Clone(data)
	var changes []string
	for _, s := range settings {
		d, err := parseTOML(src)
		if err != nil {
			if len(changes) > 0 {
				return nil, nil, fmt.Errorf("setup cannot add to it without breaking it (%v): a table written inline or with dotted keys? add %s by hand", err, strings.Join(changes, "; "))
			}
			return nil, nil, fmt.Errorf("not valid TOML: %v", err)
		}
		name := strings.Join(s.path, ".")
		have, ok := d.lookup(s.path)
		if o, isTable := s.value.(*object); isTable && ok {
			// As in JSON: the user's entry stands unless it has none of
			// the setting's keys (a table made only by its sub-table).
			if m, isMap := have.(map[string]any); !isMap || hasAnyKey(m, o.keys) {
				continue
			}
			ok = false
		}
		switch {
		case ok && equalTOML(have, s.value):
			continue
		case ok:
			i := slices.IndexFunc(d.kvs, func(kv tomlKV) bool { return slices.Equal(kv.path, s.path) })
			if i < 0 {
				return nil, nil, fmt.Errorf("%s is set where setup cannot edit it (in an inline table, or as a table of its own): set it to %s by hand", name, tomlValue(s.value))
			}
			r := d.kvs[i].value
			src = slices.Concat(src[:r[0]], []byte(tomlValue(s.value)), src[r[1]:])
			changes = append(changes, fmt.Sprintf("%s: %s, was %s", name, describe(s.value), strings.TrimSpace(string(d.src[r[0]:r[1]]))))
			continue
		}
		table, key := s.path[:len(s.path)-1], s.path[len(s.path)-1]
		var text string
		if o, isTable := s.value.(*object); isTable {
			table, text = s.path, tomlTableBody(o)
		} else {
			text = key + " = " + tomlValue(s.value) + "\n"
		}
		at := -1
		switch ti := slices.IndexFunc(d.tables, func(t tomlTable) bool { return slices.Equal(t.path, table) }); {
		case len(table) == 0 && d.rootEnd > 0:
			at = d.rootEnd
		case len(table) == 0 && d.firstHeader >= 0:
			at, text = d.firstHeader, text+"\n"
		case ti >= 0:
			at = d.tables[ti].end
		}
		if at >= 0 {
			if at > 0 && src[at-1] != '\n' {
				text = "\n" + text
			}
			src = slices.Concat(src[:at], []byte(text), src[at:])
		} else {
			// A new table, at the end.
			if len(table) > 0 {
				text = "[" + tomlKey(table) + "]\n" + text
				if len(bytes.TrimSpace(src)) > 0 {
					text = "\n" + text
				}
			}
			if len(src) > 0 && src[len(src)-1] != '\n' {
				text = "\n" + text
			}
			src = append(src, text...)
		}
		changes = append(changes, name+": added "+describe(s.value))
	}
	if len(changes) == 0 {
		return data, nil, nil
	}
	// The edit must give a document that holds every setting: a table the
	// user wrote inline or with dotted keys cannot take a new header.
	d, err := parseTOML(src)
	if err != nil {
		return nil, nil, fmt.Errorf("setup cannot add to it without breaking it (%v): a table written inline or with dotted keys? add %s by hand", err, strings.Join(changes, "; "))
	}
	for _, s := range settings {
		if have, ok := d.lookup(s.path); !ok || (s.how == replace && !equalTOML(have, s.value)) {
			return nil, nil, fmt.Errorf("setup could not set %s in it: set it to %s by hand", strings.Join(s.path, "."), describe(s.value))
		}
	}
	return src, changes, nil
}

// equalTOML compares a decoded TOML value with a setting's scalar value.
func equalTOML(have, want any) bool {
	if l, ok := want.([]string); ok {
		h, ok := have.([]any)
		return ok && reflect.DeepEqual(h, toJSON(l))
	}
	return have == want
}

// tomlValue writes a setting's value (string, bool, []string) as TOML.
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v) // the values are plain ASCII, where Go's and TOML's escapes agree
	case bool:
		return strconv.FormatBool(v)
	case []string:
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = tomlValue(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	panic(fmt.Sprintf("harnessconf: no TOML for %T", v))
}

// tomlTableBody is a table's keys, one a line.
func tomlTableBody(o *object) string {
	var b strings.Builder
	for _, k := range o.keys {
		b.WriteString(k + " = " + tomlValue(o.vals[k]) + "\n")
	}
	return b.String()
}

// tomlKey is a dotted key, each part bare when it can be.
func tomlKey(path []string) string {
	parts := make([]string, len(path))
	for i, k := range path {
		parts[i] = k
		if k == "" || strings.IndexFunc(k, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) >= 0 {
			parts[i] = strconv.Quote(k)
		}
	}
	return strings.Join(parts, ".")
}
