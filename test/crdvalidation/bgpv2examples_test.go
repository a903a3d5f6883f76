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

// BGP unnumbered as Cilium's cilium.io/v2 writes it: a peer on a named
// interface, one on the interface of the default route, and a link-local
// peer at a given address over peerInterface.
const bgpUnnumberedV2 = `
apiVersion: cilium.io/v2
kind: CiliumBGPClusterConfig
metadata:
  name: cilium-bgp-unnumbered
spec:
  bgpInstances:
  - name: "instance-65000"
    localASN: 65000
    peers:
    - name: "leaf-a"
      peerASN: 65100
      autoDiscovery:
        mode: "Unnumbered"
        unnumbered:
          interface: "eth1"
    - name: "leaf-b"
      peerASN: 65100
      autoDiscovery:
        mode: "Unnumbered"
        defaultGateway:
          addressFamily: ipv4
    - name: "leaf-c"
      peerASN: 65100
      peerAddress: "fe80::1"
      peerInterface: "eth2"
`

func TestCiliumV2Unnumbered(t *testing.T) {
	createAt(t, "v2", v2alpha1.BGPClusterConfigPlural, "cilium-bgp-unnumbered", bgpUnnumberedV2)
	cc, err := clientset.CiliumV2alpha1().CiliumBGPClusterConfigs().Get(context.Background(), "cilium-bgp-unnumbered", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	peers := cc.Spec.BGPInstances[0].Peers
	if len(peers) != 3 {
		t.Fatalf("peers %+v", peers)
	}
	if ad := peers[0].AutoDiscovery; ad == nil || ad.Mode != v2alpha1.BGPUnnumberedMode || ad.Unnumbered == nil || ad.Unnumbered.Interface != "eth1" {
		t.Errorf("leaf-a %+v", peers[0])
	}
	if ad := peers[1].AutoDiscovery; ad == nil || ad.Mode != v2alpha1.BGPUnnumberedMode || ad.DefaultGateway == nil || ad.DefaultGateway.AddressFamily != "ipv4" {
		t.Errorf("leaf-b %+v", peers[1])
	}
	if ptr.Deref(peers[2].PeerInterface, "") != "eth2" || ptr.Deref(peers[2].PeerAddress, "") != "fe80::1" {
		t.Errorf("leaf-c %+v", peers[2])
	}
}
