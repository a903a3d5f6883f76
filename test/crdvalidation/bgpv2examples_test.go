package crdvalidation

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// Cilium's cilium.io/v2 documentation examples (testdata/cilium-v2-bgp.yaml)
// apply unchanged, and Herald, which reads v2alpha1, sees their v2 fields:
// the cluster config's localPort, a peer's autoDiscovery.
func TestCiliumV2Examples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "cilium-v2-bgp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plurals := map[string]string{"CiliumBGPClusterConfig": v2alpha1.BGPClusterConfigPlural, "CiliumBGPPeerConfig": v2alpha1.BGPPeerConfigPlural}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatal(err)
		}
		if obj.GetAPIVersion() != "cilium.io/v2" {
			t.Fatalf("%s %s is %s, want an example of cilium.io/v2", obj.GetKind(), obj.GetName(), obj.GetAPIVersion())
		}
		createAt(t, "v2", plurals[obj.GetKind()], obj.GetName(), string(doc))
	}

	ccs := clientset.CiliumV2alpha1().CiliumBGPClusterConfigs()
	cc, err := ccs.Get(context.Background(), "cilium-bgp", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if inst := cc.Spec.BGPInstances[0]; ptr.Deref(inst.LocalPort, 0) != 179 || len(inst.Peers) != 2 {
		t.Errorf("cilium-bgp instance %+v, want localPort 179 and two peers", inst)
	}
	ad, err := ccs.Get(context.Background(), "cilium-bgp-autodiscovery", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := &v2alpha1.BGPAutoDiscovery{Mode: v2alpha1.BGPDefaultGatewayMode, DefaultGateway: &v2alpha1.DefaultGateway{AddressFamily: "ipv6"}}
	if p := ad.Spec.BGPInstances[0].Peers[0]; p.PeerAddress != nil || p.AutoDiscovery == nil || *p.AutoDiscovery.DefaultGateway != *want.DefaultGateway || p.AutoDiscovery.Mode != want.Mode {
		t.Errorf("tor-switch peer %+v, want autoDiscovery %+v and no address", p, want)
	}
}
