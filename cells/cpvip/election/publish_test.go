package election

import (
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

func TestMemberChanged(t *testing.T) {
	at := time.Unix(1000, 0)
	old := &tables.ControlPlaneMember{Node: "cp2", Addr: "198.18.0.2", Present: true, Eligible: true, LastHeard: at}
	for _, tc := range []struct {
		name string
		edit func(m *tables.ControlPlaneMember)
		want bool
	}{
		{"a beat later", func(m *tables.ControlPlaneMember) { m.LastHeard = at.Add(50 * time.Millisecond) }, false},
		{"a second later", func(m *tables.ControlPlaneMember) { m.LastHeard = at.Add(time.Second) }, true},
		{"no longer eligible", func(m *tables.ControlPlaneMember) { m.Eligible = false }, true},
		{"gone, its last beat a moment later", func(m *tables.ControlPlaneMember) {
			m.Present, m.LastHeard = false, at.Add(50*time.Millisecond)
		}, true},
		{"configured differently", func(m *tables.ControlPlaneMember) { m.Mismatch = "vips differ" }, true},
	} {
		row := *old
		tc.edit(&row)
		if got := memberChanged(old, &row); got != tc.want {
			t.Errorf("%s: changed %v, want %v", tc.name, got, tc.want)
		}
	}
}
