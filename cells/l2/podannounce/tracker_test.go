package podannounce

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

func TestTracker(t *testing.T) {
	start := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	after, before := start.Add(time.Second), start.Add(-time.Hour)
	row := func(ip, container string, since time.Time) *tables.PodIPAllocation {
		return &tables.PodIPAllocation{
			IP: netip.MustParseAddr(ip), Network: "herald", ContainerID: container, IfName: "eth0",
			PodNS: "ns", PodName: "pod-" + container, Since: since,
		}
	}
	// step is one change of the table (upsert or delete), or, with sent
	// set, the announcement of row going out.
	type step struct {
		row     *tables.PodIPAllocation
		deleted bool
		sent    bool
	}
	a := row("198.18.64.5", "a", after)
	tests := []struct {
		name  string
		steps []step
		want  []string // pending, in order
	}{
		{"new IPv4 allocation", []step{{row: a}}, []string{"198.18.64.5"}},
		{"IPv6 never (ARP only, as the spec says)", []step{{row: row("fd00:64::5", "a", after)}}, nil},
		{"allocation made at the very start", []step{{row: row("198.18.64.5", "a", start)}}, []string{"198.18.64.5"}},
		{"restored from the journal after a restart", []step{{row: row("198.18.64.5", "a", before)}}, nil},
		{"sent once", []step{{row: a}, {row: a, sent: true}}, nil},
		{"rewritten after it was sent", []step{{row: a}, {row: a, sent: true}, {row: row("198.18.64.5", "a", after)}}, nil},
		{"rewritten while pending: once", []step{{row: a}, {row: row("198.18.64.5", "a", after)}}, []string{"198.18.64.5"}},
		{"released before it was sent", []step{{row: a}, {row: a, deleted: true}}, nil},
		{"released and given again", []step{
			{row: a}, {row: a, sent: true}, {row: a, deleted: true}, {row: row("198.18.64.5", "b", after.Add(time.Second))},
		}, []string{"198.18.64.5"}},
		{"released and given again to the same container", []step{
			{row: a}, {row: a, sent: true}, {row: a, deleted: true}, {row: row("198.18.64.5", "a", after.Add(time.Second))},
		}, []string{"198.18.64.5"}},
		{"given to another container, release unseen", []step{
			{row: a}, {row: a, sent: true}, {row: row("198.18.64.5", "b", after.Add(time.Second))},
		}, []string{"198.18.64.5"}},
		{"restored, released, given again", []step{
			{row: row("198.18.64.5", "a", before)}, {row: row("198.18.64.5", "a", before), deleted: true}, {row: row("198.18.64.5", "b", after)},
		}, []string{"198.18.64.5"}},
		{"late deletion of the previous allocation keeps the new one", []step{
			{row: row("198.18.64.5", "b", after.Add(time.Second))}, {row: a, deleted: true},
		}, []string{"198.18.64.5"}},
		{"deletion of an allocation never seen", []step{{row: a, deleted: true}}, nil},
		{"sent for an allocation replaced meanwhile", []step{
			{row: a}, {row: row("198.18.64.5", "b", after.Add(time.Second))}, {row: a, sent: true},
		}, []string{"198.18.64.5"}},
		{"first come, first served", []step{
			{row: row("198.18.64.9", "c", after)}, {row: row("198.18.64.7", "d", after)}, {row: row("198.18.64.8", "e", after)},
		}, []string{"198.18.64.9", "198.18.64.7", "198.18.64.8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker(start)
			for _, s := range tt.steps {
				if s.sent {
					tr.sent(s.row)
				} else {
					tr.observe(s.row, s.deleted)
				}
			}
			var got []string
			for _, p := range tr.pending() {
				got = append(got, p.IP.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pending %v, want %v", got, tt.want)
			}
		})
	}
}
