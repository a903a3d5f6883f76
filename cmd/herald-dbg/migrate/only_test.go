package migrate

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

func TestOnly(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	all := Result{
		Objects: []runtime.Object{
			&v2alpha1.CiliumLoadBalancerIPPool{ObjectMeta: meta("pool")},
			&v2alpha1.CiliumL2AnnouncementPolicy{ObjectMeta: meta("l2")},
			&v2alpha1.CiliumBGPPeerConfig{ObjectMeta: meta("peer")},
			&v2alpha1.CiliumBGPAdvertisement{ObjectMeta: meta("advert")},
			&v2alpha1.CiliumBGPClusterConfig{ObjectMeta: meta("cluster")},
		},
		Findings: []Finding{{Source: "IPAddressPool x/pool", Field: "spec.addresses[0]", Verdict: Exact}},
	}
	for _, tc := range []struct {
		parts   []string
		want    []string
		wantErr bool
	}{
		{parts: nil, want: []string{"pool", "l2", "peer", "advert", "cluster"}},
		{parts: []string{PartLBIPAM}, want: []string{"pool"}},
		{parts: []string{PartL2}, want: []string{"l2"}},
		{parts: []string{PartBGP, PartLBIPAM}, want: []string{"pool", "peer", "advert", "cluster"}},
		{parts: []string{"pools"}, wantErr: true},
	} {
		got, err := all.Only(tc.parts)
		if (err != nil) != tc.wantErr {
			t.Fatalf("Only(%v): error %v, want error %v", tc.parts, err, tc.wantErr)
		}
		if err != nil {
			continue
		}
		var names []string
		for _, obj := range got.Objects {
			names = append(names, obj.(metav1.Object).GetName())
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("Only(%v) = %v, want %v", tc.parts, names, tc.want)
		}
		if len(got.Findings) != len(all.Findings) {
			t.Errorf("Only(%v) dropped findings: %d, want %d", tc.parts, len(got.Findings), len(all.Findings))
		}
	}
}
