package candidates

import (
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// TestReportStranded: one Event per transition, not per derivation, and
// only from the reporter.
func TestReportStranded(t *testing.T) {
	events := record.NewFakeRecorder(10)
	p := params{Agent: agentconfig.Config{NodeName: "node1"}, Log: slog.New(slog.DiscardHandler), Events: events}
	services := []*tables.Service{svc("shop/web", nil, "", []string{"198.18.0.220"}, nil)}
	reported := map[string]reportedAs{}
	round := func(sts ...stranded) []string {
		reportStranded(p, sts, services, nil, reported)
		var got []string
		for len(events.Events) > 0 {
			got = append(got, <-events.Events)
		}
		return got
	}
	noEndpoint := stranded{service: "shop/web", cause: noReadyEndpoint, selected: 2, reporter: "node1"}
	noLocal := stranded{service: "shop/web", cause: noLocalEndpoint, selected: 2, reporter: "node1"}
	elsewhere := stranded{service: "shop/web", cause: noReadyEndpoint, selected: 2, reporter: "node0"}

	steps := []struct {
		name string
		now  []stranded
		want string // the Event's text, "" for none
	}{
		{"withdrawn", []stranded{noEndpoint}, "Warning L2NotAnnounced No node announces 198.18.0.220: the Service has no ready endpoint"},
		{"still withdrawn: no second Event", []stranded{noEndpoint}, ""},
		{"another cause", []stranded{noLocal}, "Warning L2NotAnnounced No node announces 198.18.0.220: externalTrafficPolicy is Local"},
		{"served again", nil, ""},
		{"withdrawn again", []stranded{noEndpoint}, "Warning L2NotAnnounced No node announces 198.18.0.220: the Service has no ready endpoint"},
		{"its IP changes while withdrawn", []stranded{noEndpoint}, "Warning L2NotAnnounced No node announces 198.18.0.230: the Service has no ready endpoint"},
		{"another node reports", []stranded{elsewhere}, ""},
	}
	for _, s := range steps {
		if s.name == "its IP changes while withdrawn" {
			services[0].IngressIPs = []netip.Addr{netip.MustParseAddr("198.18.0.230")}
		}
		got := round(s.now...)
		switch {
		case s.want == "" && len(got) != 0:
			t.Fatalf("%s: Events %q, want none", s.name, got)
		case s.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], s.want)):
			t.Fatalf("%s: Events %q, want one starting %q", s.name, got, s.want)
		}
	}
	if len(reported) != 0 {
		t.Fatalf("still remembered: %v", slices.Collect(maps.Keys(reported)))
	}
}

// TestNotAnnouncedSubject: an IP another announced Service shares is said
// to stay announced; the Service's own IPs alone read as before.
func TestNotAnnouncedSubject(t *testing.T) {
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	rows := []*tables.L2Candidate{
		{Group: "shop/web", Services: []string{"shop/api", "shop/web"}, IPs: []netip.Addr{ip("198.18.0.220")}, Nodes: []string{"node1"}},
		{Group: "shop/idle", Services: []string{"shop/idle"}, IPs: []netip.Addr{ip("198.18.0.221")}},
	}
	for _, tc := range []struct {
		name, service string
		ips           []netip.Addr
		subject       string
		shared        string
	}{
		{"alone", "shop/lone", []netip.Addr{ip("198.18.0.230")}, "No node announces 198.18.0.230", ""},
		{"shares an announced IP", "shop/web", []netip.Addr{ip("198.18.0.220")},
			"No node announces 198.18.0.220 for this Service", ". 198.18.0.220 stays announced for shop/api, which shares it"},
		{"shares with a group nobody may announce", "shop/other", []netip.Addr{ip("198.18.0.221")}, "No node announces 198.18.0.221", ""},
	} {
		subject, shared := notAnnouncedSubject(tc.service, tc.ips, rows)
		if subject != tc.subject || shared != tc.shared {
			t.Errorf("%s: %q %q, want %q %q", tc.name, subject, shared, tc.subject, tc.shared)
		}
	}
}
