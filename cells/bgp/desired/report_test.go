package desired

import (
	"log/slog"
	"net/netip"
	"strings"
	"testing"

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
	n1 := node("node1", map[string]string{"rack": "b"}, "")
	n2 := node("node2", map[string]string{"rack": "a"}, "")
	n3 := node("node3", map[string]string{"rack": "a"}, "")
	nodes := []*tables.Node{n3, n1, n2}
	for _, tt := range []struct {
		self *tables.Node
		want bool
	}{
		{n1, true},  // first of config b (n2 and n3 get a: the first by name applies)
		{n2, true},  // first of config a
		{n3, false}, // n2 reports for a
	} {
		if got := reports(tt.self, configs, nodes); got != tt.want {
			t.Errorf("%s reports: %v, want %v", tt.self.Name, got, tt.want)
		}
	}
	if reports(n1, []*tables.BGPClusterConfig{rackA}, nodes) {
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
