package desired

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// Each setting without effect is logged once, however often the node
// derives; again once it went and came back; never while it has effect.
func TestNotices(t *testing.T) {
	var buf bytes.Buffer
	n := &notices{log: slog.New(slog.NewTextHandler(&buf, nil))}
	pods := advert("pods", tables.BGPAdvert{Type: v2alpha1.BGPPodCIDRAdvert})
	more := advert("more", lbAdvert, tables.BGPAdvert{Type: v2alpha1.BGPPodCIDRAdvert})
	lb := advert("lb", lbAdvert)
	ports := func(peers ...string) *tables.BGPNodeOverride {
		return &tables.BGPNodeOverride{Name: "node1", Instances: []tables.BGPInstanceOverride{{Name: "main", IgnoredPeerLocalPorts: peers}}}
	}
	steps := []struct {
		name      string
		multiPool bool
		adverts   []*tables.BGPAdvertisement
		override  *tables.BGPNodeOverride
		want      [][]string // per line, what it contains
	}{
		{"without multi-pool PodCIDR is advertised", false, []*tables.BGPAdvertisement{pods}, ports(), nil},
		{"multi-pool: each one asking, once", true, []*tables.BGPAdvertisement{lb, more, pods}, nil,
			[][]string{{"multi-pool", "advertisement=more"}, {"multi-pool", "advertisement=pods"}}},
		{"derived again: not again", true, []*tables.BGPAdvertisement{lb, more, pods}, nil, nil},
		{"pods stops asking", true, []*tables.BGPAdvertisement{lb, more}, nil, nil},
		{"and asks again: logged again", true, []*tables.BGPAdvertisement{more, pods}, nil,
			[][]string{{"multi-pool", "advertisement=pods"}}},
		{"an override with a peer's localPort", false, nil, ports("tor"),
			[][]string{{"localPort", "override=node1", "main/tor"}}},
		{"the same: not again", false, nil, ports("tor"), nil},
		{"another peer's too: logged with both", false, nil, ports("tor", "tor6"),
			[][]string{{"localPort", "override=node1", "main/tor main/tor6"}}},
		{"none left", false, nil, ports(), nil},
	}
	for _, s := range steps {
		n.update(s.multiPool, s.adverts, s.override)
		got := strings.FieldsFunc(buf.String(), func(r rune) bool { return r == '\n' })
		buf.Reset()
		if len(got) != len(s.want) {
			t.Fatalf("%s: logged %q, want %d lines with %q", s.name, got, len(s.want), s.want)
		}
		for i, want := range s.want {
			for _, w := range want {
				if !strings.Contains(got[i], w) {
					t.Errorf("%s: line %q lacks %q", s.name, got[i], w)
				}
			}
		}
	}
}
