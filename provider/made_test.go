package provider

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPortsLabel(t *testing.T) {
	ports := []PortSpec{{Name: "web", Port: 8080}, {Name: "api", Port: 9000}}
	label := PortsLabel(ports)
	if label != "api=9000,web=8080" {
		t.Fatalf("PortsLabel = %q", label)
	}
	want := []PortSpec{{Name: "api", Port: 9000}, {Name: "db", Port: 5432}, {Name: "web", Port: 8080}}
	if got := ParsePortsLabel(label + ",broken,=1,x=y, db=5432"); !reflect.DeepEqual(got, want) {
		t.Fatalf("ParsePortsLabel = %v", got)
	}
}

func TestMadeUndo(t *testing.T) {
	var order []string
	var m Made
	for _, name := range []string{"network", "container"} {
		m.Add(func(context.Context) (string, error) {
			order = append(order, name)
			if name == "network" {
				return name, errors.New("in use")
			}
			return name, nil
		})
	}
	cause := errors.New("start failed")
	err := m.Undo(context.Background(), cause)
	if !reflect.DeepEqual(order, []string{"container", "network"}) {
		t.Errorf("undone in order %v, want newest first", order)
	}
	if !errors.Is(err, cause) || !errors.Is(err, ErrLeftBehind) || !strings.Contains(err.Error(), "network (in use)") {
		t.Errorf("Undo = %v", err)
	}
	if err := (Made{}).Undo(context.Background(), cause); err != cause {
		t.Errorf("Undo of nothing = %v, want the cause", err)
	}
}
