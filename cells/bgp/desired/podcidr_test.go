package desired

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// Under multi-pool IPAM each advertisement asking for PodCIDR is logged
// once, however often the node derives; again once it stopped asking and
// asks again; never without multi-pool.
func TestPodCIDRNotice(t *testing.T) {
	var buf bytes.Buffer
	n := &podCIDRNotice{log: slog.New(slog.NewTextHandler(&buf, nil)), logged: map[string]bool{}}
	pods := advert("pods", tables.BGPAdvert{Type: v2alpha1.BGPPodCIDRAdvert})
	more := advert("more", lbAdvert, tables.BGPAdvert{Type: v2alpha1.BGPPodCIDRAdvert})
	lb := advert("lb", lbAdvert)
	lines := func() []string {
		defer buf.Reset()
		return strings.FieldsFunc(buf.String(), func(r rune) bool { return r == '\n' })
	}
	steps := []struct {
		name      string
		multiPool bool
		adverts   []*tables.BGPAdvertisement
		want      []string // advertisement=<name> of each line
	}{
		{"without multi-pool PodCIDR is advertised", false, []*tables.BGPAdvertisement{pods}, nil},
		{"multi-pool: each one asking, once", true, []*tables.BGPAdvertisement{lb, more, pods}, []string{"advertisement=more", "advertisement=pods"}},
		{"derived again: not again", true, []*tables.BGPAdvertisement{lb, more, pods}, nil},
		{"pods stops asking", true, []*tables.BGPAdvertisement{lb, more}, nil},
		{"and asks again: logged again", true, []*tables.BGPAdvertisement{more, pods}, []string{"advertisement=pods"}},
	}
	for _, s := range steps {
		n.notice(s.multiPool, s.adverts)
		got := lines()
		if len(got) != len(s.want) {
			t.Fatalf("%s: logged %q, want lines naming %q", s.name, got, s.want)
		}
		for i, w := range s.want {
			if !strings.Contains(got[i], w) || !strings.Contains(got[i], "multi-pool") {
				t.Errorf("%s: line %q, want one naming %s and multi-pool", s.name, got[i], w)
			}
		}
	}
}
