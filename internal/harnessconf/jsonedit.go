package harnessconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// object is a JSON object that keeps its keys in the order they came, so a
// user's file is written back as they laid it out.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// set puts v at k: in place when k is there, else last.
func (o *object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// decodeJSON reads one JSON value; objects become *object, arrays []any,
// numbers json.Number (so 1.0 stays 1.0), the rest as encoding/json has
// them.
func decodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("more than one value (at byte %d)", d.InputOffset())
	}
	return v, nil
}

func decodeValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := newObject()
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			o.set(kt.(string), v)
		}
		_, err := d.Token() // }
		return o, err
	case json.Delim('['):
		a := []any{}
		for d.More() {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.Token() // ]
		return a, err
	}
	return t, nil
}

// encodeJSON writes v indented by two spaces, objects in their order,
// with a final newline.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	writeJSON(&b, v, "\n")
	b.WriteByte('\n')
	return b.Bytes()
}

// compactJSON is v on one line, for messages.
func compactJSON(v any) string {
	var b bytes.Buffer
	writeJSON(&b, v, "")
	return b.String()
}

// writeJSON writes v; line is what starts a line at v's depth ("\n" and
// its indent), "" for one line.
func writeJSON(b *bytes.Buffer, v any, line string) {
	inner, space := "", " "
	if line != "" {
		inner, space = line+"  ", ""
	}
	switch v := v.(type) {
	case *object:
		if len(v.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{")
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString("," + space)
			}
			b.WriteString(inner)
			writeScalar(b, k)
			b.WriteString(": ")
			writeJSON(b, v.vals[k], inner)
		}
		b.WriteString(line + "}")
	case []any:
		// A list of scalars stays on one line, as people write args and
		// deny lists; one holding objects or lists goes one item a line.
		if len(v) == 0 || !nested(v) {
			inner, line, space = "", "", " "
		}
		b.WriteString("[")
		for i, x := range v {
			if i > 0 {
				b.WriteString("," + space)
			}
			b.WriteString(inner)
			writeJSON(b, x, inner)
		}
		b.WriteString(line + "]")
	default:
		writeScalar(b, v)
	}
}

func nested(a []any) bool {
	for _, x := range a {
		switch x.(type) {
		case *object, []any:
			return true
		}
	}
	return false
}

// writeScalar writes a string, number, bool or null as JSON, without
// encoding/json's escaping of <, > and &.
func writeScalar(b *bytes.Buffer, v any) {
	var s bytes.Buffer
	e := json.NewEncoder(&s)
	e.SetEscapeHTML(false)
	_ = e.Encode(v) // scalars always encode
	b.Write(bytes.TrimSuffix(s.Bytes(), []byte("\n")))
}

// toJSON turns a setting's value (string, bool, []string, *object) into
// what decodeJSON gives, so the two compare equal.
func toJSON(v any) any {
	switch v := v.(type) {
	case []string:
		a := make([]any, len(v))
		for i, s := range v {
			a[i] = s
		}
		return a
	case *object:
		o := newObject()
		for _, k := range v.keys {
			o.set(k, toJSON(v.vals[k]))
		}
		return o
	}
	return v
}

// equalJSON compares two decoded values; objects regardless of key order.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case *object:
		b, ok := b.(*object)
		if !ok || len(a.keys) != len(b.keys) {
			return false
		}
		for _, k := range a.keys {
			bv, ok := b.vals[k]
			if !ok || !equalJSON(a.vals[k], bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// editJSON applies settings to the JSON document data (empty: a new file)
// and returns the new document and what changed.
func editJSON(data []byte, settings []setting) ([]byte, []string, error) {
	root := newObject()
	if len(bytes.TrimSpace(data)) > 0 {
		v, err := decodeJSON(data)
		if err != nil {
			hint := ""
			if bytes.Contains(data, []byte("//")) || bytes.Contains(data, []byte("/*")) {
				hint = " (comments are not JSON: take them out, or add the entries by hand)"
			}
			return nil, nil, fmt.Errorf("not valid JSON: %v%s", err, hint)
		}
		o, ok := v.(*object)
		if !ok {
			return nil, nil, fmt.Errorf("holds a JSON %s, not an object", kindJSON(v))
		}
		root = o
	}
	var changes []string
	for _, s := range settings {
		parent := root
		for i, k := range s.path[:len(s.path)-1] {
			v, ok := parent.get(k)
			if !ok {
				v = newObject()
				parent.set(k, v)
			}
			o, ok := v.(*object)
			if !ok {
				return nil, nil, fmt.Errorf("%s is a JSON %s, where setup needs an object to set %s in: make it an object, or remove it",
					strings.Join(s.path[:i+1], "."), kindJSON(v), strings.Join(s.path, "."))
			}
			parent = o
		}
		key := s.path[len(s.path)-1]
		want := toJSON(s.value)
		have, ok := parent.get(key)
		name := strings.Join(s.path, ".")
		switch {
		case !ok:
			parent.set(key, want)
			changes = append(changes, name+": added "+describe(s.value))
		case s.how == keep:
			// The user's own entry (another --repo, an env) stands, unless
			// it is an object with none of the setting's keys (only an env,
			// say): those are added to it.
			if o, isObject := have.(*object); isObject && !hasAnyKey(o.vals, want.(*object).keys) {
				var added []string
				for _, k := range want.(*object).keys {
					o.set(k, want.(*object).vals[k])
					added = append(added, k)
				}
				changes = append(changes, name+": added "+strings.Join(added, ", "))
			}
		case s.how == union:
			list, isList := have.([]any)
			if !isList {
				return nil, nil, fmt.Errorf("%s is a JSON %s, where setup needs a list to add %s to: make it a list, or remove it",
					name, kindJSON(have), describe(s.value))
			}
			var added []string
			for _, x := range want.([]any) {
				if !containsJSON(list, x) {
					list = append(list, x)
					added = append(added, x.(string))
				}
			}
			if len(added) > 0 {
				parent.set(key, list)
				changes = append(changes, name+": added "+strings.Join(added, ", "))
			}
		case !equalJSON(have, want):
			parent.set(key, want)
			changes = append(changes, fmt.Sprintf("%s: %s, was %s", name, describe(s.value), compactJSON(have)))
		}
	}
	if len(changes) == 0 {
		return data, nil, nil
	}
	return encodeJSON(root), changes, nil
}

func containsJSON(list []any, x any) bool {
	for _, y := range list {
		if equalJSON(x, y) {
			return true
		}
	}
	return false
}

func kindJSON(v any) string {
	switch v.(type) {
	case *object:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "number"
}

// hasAnyKey tells whether m has one of keys: an entry of the user's that
// setup leaves as it is.
func hasAnyKey[V any](m map[string]V, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}
