package jsonschema

import "testing"

// TestMetaschemasOnFirstUse: no metaschema is compiled at init (the patch,
// PATCH.md), and the first compiler still checks a schema against its
// draft's metaschema.
func TestMetaschemasOnFirstUse(t *testing.T) {
	if Draft2020.sch != nil {
		t.Fatal("the metaschemas were compiled at init")
	}
	c := NewCompiler()
	if err := c.AddResource("bad.json", map[string]any{"type": 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("bad.json"); err == nil {
		t.Fatal(`a schema with "type": 5 compiled: it was not checked against its metaschema`)
	}
	if Draft2020.sch == nil || Draft4.sch == nil {
		t.Fatal("NewCompiler did not compile the metaschemas")
	}
	if err := c.AddResource("good.json", map[string]any{"type": "string"}); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("good.json")
	if err != nil {
		t.Fatal(err)
	}
	if sch.Validate("x") != nil || sch.Validate(5) == nil {
		t.Fatal("validation against a compiled schema is wrong")
	}
}
