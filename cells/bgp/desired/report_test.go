package desired

import (
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/tables"
)

// TestReports: the first node by name of each cluster config reports.
func TestReports(t *testing.T) {
	rackA := clusterConfig("a", "pc")
	rackA.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"rack": "a"}}
	all := clusterConfig("b", "pc")
	configs := []*tables.BGPClusterConfig{rackA, all}
	nodes := []*tables.Node{node("node3", map[string]string{"rack": "a"}, ""), node("node1", map[string]string{"rack": "b"}, ""),
		node("node2", map[string]string{"rack": "a"}, ""), node("node0", map[string]string{"rack": "a"}, "")}
	// node0 stays with b, which it ran before a selected it; node2 and
	// node3 have no owner yet and get the oldest, a.
	all.CreationTimestamp = rackA.CreationTimestamp.Add(time.Hour)
	owners := tables.BGPOwners(configs, nodes, map[string]string{"node0": "b"})
	for _, tt := range []struct {
		self string
		want bool
	}{
		{"node0", true},  // first of config b
		{"node1", false}, // node0 reports for b
		{"node2", true},  // first of config a
		{"node3", false}, // node2 reports for a
	} {
		if got := reports(tt.self, owners); got != tt.want {
			t.Errorf("%s reports: %v, want %v (owners %v)", tt.self, got, tt.want, owners)
		}
	}
	if reports("node9", owners) {
		t.Errorf("a node no config selects reports")
	}
}

// TestWithheldReporter: one Event per transition.
func TestWithheldReporter(t *testing.T) {
	events := record.NewFakeRecorder(10)
	r := &withheldReporter{events: events, log: slog.New(slog.DiscardHandler), reported: map[string]string{}}
	ip := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	for _, step := range []struct {
		name     string
		withheld map[string][]netip.Addr
		want     string // the Event, "" for none
	}{
		{"withdrawn", map[string][]netip.Addr{"default/web": ip("198.18.200.1")}, "Warning BGPNotAdvertised BGP withdraws 198.18.200.1 (nodes of CiliumBGPClusterConfig cc)"},
		{"still withdrawn", map[string][]netip.Addr{"default/web": ip("198.18.200.1")}, ""},
		{"another address", map[string][]netip.Addr{"default/web": ip("198.18.200.1", "fd00::1")}, "Warning BGPNotAdvertised BGP withdraws 198.18.200.1, fd00::1"},
		{"advertised again", nil, ""},
		{"withdrawn again", map[string][]netip.Addr{"default/web": ip("198.18.200.1")}, "Warning BGPNotAdvertised BGP withdraws 198.18.200.1 "},
	} {
		r.report("cc", step.withheld)
		var got []string
		for len(events.Events) > 0 {
			got = append(got, <-events.Events)
		}
		switch {
		case step.want == "" && len(got) != 0:
			t.Fatalf("%s: Events %q, want none", step.name, got)
		case step.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], step.want)):
			t.Fatalf("%s: Events %q, want one starting %q", step.name, got, step.want)
		}
	}
}
