package migrate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// translateSample translates one of MetalLB's samples (test/migrate/metallb).
func translateSample(t *testing.T, name string) Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "test", "migrate", "metallb", name))
	if err != nil {
		t.Fatal(err)
	}
	var in Input
	if err := in.Decode(bytes.NewReader(data), name); err != nil {
		t.Fatal(err)
	}
	return Translate(in)
}

// verdictOn returns the verdict on a field of a source, "" when there is
// no finding on it.
func verdictOn(res Result, source, field string) Verdict {
	for _, f := range res.Findings {
		if f.Source == source && f.Field == field {
			return f.Verdict
		}
	}
	return ""
}

// TestServiceSelectors: MetalLB v0.16's serviceSelectors of L2 and BGP
// advertisements become the selectors of Herald's policy and
// advertisement, which otherwise announce every Service.
func TestServiceSelectors(t *testing.T) {
	res := translateSample(t, "docs-v0.16.1/advanced_l2_configuration-06.yaml")
	policy := res.Objects[0].(*v2alpha1.CiliumL2AnnouncementPolicy)
	if sel := policy.Spec.ServiceSelector; sel == nil || sel.MatchLabels["tier"] != "frontend" {
		t.Errorf("L2 policy serviceSelector %v, want tier=frontend", sel)
	}
	if v := verdictOn(res, "L2Advertisement metallb-system/frontend-services", "spec.serviceSelectors"); v != Exact {
		t.Errorf("L2 serviceSelectors: verdict %q", v)
	}

	res = translateSample(t, "docs-v0.16.1/advanced_bgp_configuration-07.yaml")
	ad := res.Objects[0].(*v2alpha1.CiliumBGPAdvertisement)
	if sel := ad.Spec.Advertisements[0].Selector; sel == nil || sel.MatchLabels["environment"] != "production" {
		t.Errorf("BGP advertisement selector %v, want environment=production", sel)
	}
	if v := verdictOn(res, "BGPAdvertisement metallb-system/production-services", "spec.serviceSelectors"); v != Exact {
		t.Errorf("BGP serviceSelectors: verdict %q", v)
	}
}

// TestLocalASN: a peer with MetalLB's localASN goes into an instance of
// that ASN; in myASN's it would open with an ASN the router refuses.
func TestLocalASN(t *testing.T) {
	res := translateSample(t, "docs-v0.16.1/advanced_bgp_configuration-15.yaml")
	var cc *v2alpha1.CiliumBGPClusterConfig
	for _, obj := range res.Objects {
		if c, ok := obj.(*v2alpha1.CiliumBGPClusterConfig); ok {
			cc = c
		}
	}
	if cc == nil || len(cc.Spec.BGPInstances) != 1 || *cc.Spec.BGPInstances[0].LocalASN != 65410 ||
		cc.Spec.BGPInstances[0].Peers[0].Name != "example" {
		t.Fatalf("cluster config %+v, want the peer in an instance of ASN 65410", cc)
	}
	if v := verdictOn(res, "BGPPeer metallb-system/example", "spec.localASN"); v != Approximate {
		t.Errorf("localASN: verdict %q", v)
	}
}

// TestPreferredNodeSelectors: MetalLB's soft node preference has no
// equivalent; the report names the field and says what to do.
func TestPreferredNodeSelectors(t *testing.T) {
	res := translateSample(t, "docs-main/advanced_l2_configuration-04.yaml")
	if v := verdictOn(res, "L2Advertisement metallb-system/tiered-zones", "spec.preferredNodeSelectors"); v != None {
		t.Errorf("preferredNodeSelectors: verdict %q", v)
	}
	if sel := res.Objects[0].(*v2alpha1.CiliumL2AnnouncementPolicy).Spec.NodeSelector; sel != nil {
		t.Errorf("nodeSelector %v: a preference is not a filter", sel)
	}
}
