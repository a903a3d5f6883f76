package cmd

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/tables"
)

// Each l2-announce row of the Service says whether this node answers for
// the IP, is taking it out of its responder (and so still owns it), or has
// it out.
func TestAnnouncementLines(t *testing.T) {
	row := func(ip string, withdrawn bool, st reconciler.Status, origins ...string) *tables.L2AnnounceEntry {
		return &tables.L2AnnounceEntry{IP: netip.MustParseAddr(ip), NetworkInterface: "eth0", MAC: "02:00:00:00:00:01", Origins: origins, Withdrawn: withdrawn, Status: st}
	}
	for _, tc := range []struct {
		name      string
		entries   []*tables.L2AnnounceEntry
		want      []string
		answering bool
	}{
		{name: "not this Service's", entries: []*tables.L2AnnounceEntry{row("198.18.0.1", false, reconciler.StatusDone(), "ns/other")}},
		{name: "answering", entries: []*tables.L2AnnounceEntry{row("198.18.0.1", false, reconciler.StatusPending(), "ns/other", "ns/web")},
			want: []string{"answers ARP for 198.18.0.1 on eth0 (02:00:00:00:00:01)"}, answering: true},
		{name: "being withdrawn", entries: []*tables.L2AnnounceEntry{row("198.18.0.1", true, reconciler.StatusPending(), "ns/web")},
			want: []string{"is taking 198.18.0.1 on eth0 out of its responder (pending), and keeps the IP until it is out"}},
		{name: "withdrawal failing", entries: []*tables.L2AnnounceEntry{row("198.18.0.1", true, reconciler.StatusError(errors.New("map busy")), "ns/web")},
			want: []string{"out of its responder (error: map busy)"}},
		{name: "out", entries: []*tables.L2AnnounceEntry{row("198.18.0.1", true, reconciler.StatusDone(), "ns/web")},
			want: []string{"no longer answers for 198.18.0.1 on eth0: out of its responder"}},
		{name: "one of two out", entries: []*tables.L2AnnounceEntry{row("198.18.0.1", true, reconciler.StatusDone(), "ns/web"), row("fd00::1", false, reconciler.StatusDone(), "ns/web")},
			want: []string{"no longer answers for 198.18.0.1", "answers neighbor solicitations for fd00::1"}, answering: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, answering := announcementLines("node1", "ns/web", tc.entries)
			if answering != tc.answering || len(lines) != len(tc.want) {
				t.Fatalf("answering %v, lines:\n%s\nwant answering %v and %d lines", answering, strings.Join(lines, "\n"), tc.answering, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) || !strings.Contains(lines[i], "this node (node1)") {
					t.Errorf("line %d: %q, want it to say %q of this node (node1)", i, lines[i], w)
				}
			}
		})
	}
}
