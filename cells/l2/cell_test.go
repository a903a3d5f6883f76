package l2

import (
	"reflect"
	"testing"
)

// Cells stop in the reverse order they start, and a stopping agent must
// be silent before it leaves the members: the elector stops first
// (withdraws every entry, waits for the responder), then the members cell
// (leaves), then the responder. So the group lists the responder, then
// the members cell, then the elector.
func TestStopOrder(t *testing.T) {
	pos := moduleOrder(t)
	order := []string{"l2-responder", "l2-members", "l2-elector"}
	for i, id := range order {
		if _, ok := pos[id]; !ok {
			t.Fatalf("module %s not found in the group (found %v)", id, pos)
		}
		if i > 0 && pos[order[i-1]] > pos[id] {
			t.Errorf("%s comes after %s in the group: it would stop before it", order[i-1], id)
		}
	}
}

// moduleOrder gives the position of each module of the group. hive has
// no accessor for a module's id: it is read by reflection, and a change
// in hive's types fails the test (no module found) rather than passing
// it.
func moduleOrder(t *testing.T) map[string]int {
	g := reflect.ValueOf(Cell)
	if g.Kind() != reflect.Slice {
		t.Fatalf("cell.Group is a %s, not a slice: hive changed", g.Kind())
	}
	pos := map[string]int{}
	for i := range g.Len() {
		c := g.Index(i).Elem()
		if c.Kind() != reflect.Pointer || c.Elem().Kind() != reflect.Struct {
			continue
		}
		if id := c.Elem().FieldByName("id"); id.IsValid() && id.Kind() == reflect.String {
			pos[id.String()] = i
		}
	}
	return pos
}
