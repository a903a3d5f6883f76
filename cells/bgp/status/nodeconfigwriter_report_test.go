package status

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned/fake"
	"github.com/heraldlb/herald/tables"
)

// enable-bgp-control-plane-status-report: on, the node config's status
// shows the sessions; off, the status an earlier run wrote is cleared and
// none is written, while the spec still is.
func TestNodeConfigStatusReport(t *testing.T) {
	inst := &tables.BGPInstance{Name: "main", ClusterConfig: "cc", LocalASN: 65001, RouterID: netip.MustParseAddr("198.18.0.11"),
		Peers: []tables.BGPPeer{{Name: "tor", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000}}}
	row := &tables.BGPNodeStatus{Node: "node1", Instances: []*tables.BGPInstance{inst}, ClusterConfig: "cc",
		Peers: []*tables.BGPPeerState{{Instance: "main", Peer: "tor", State: tables.BGPStateEstablished}}}
	client := fake.NewSimpleClientset()
	get := func() *v2alpha1.CiliumBGPNodeConfig {
		nc, err := client.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(context.Background(), "node1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return nc
	}

	on := &nodeConfigWriter{client: client, log: slog.New(slog.DiscardHandler), name: "node1", report: true}
	if err := on.Update(context.Background(), nil, 0, row); err != nil {
		t.Fatal(err)
	}
	if nc := get(); len(nc.Status.BGPInstances) != 1 || len(nc.Status.Conditions) != 2 {
		t.Fatalf("reported status %+v", nc.Status)
	}

	// The agent restarts with the option off.
	inst.Peers = append(inst.Peers, tables.BGPPeer{Name: "tor2", Address: netip.MustParseAddr("198.18.0.2"), ASN: 65000})
	off := &nodeConfigWriter{client: client, log: slog.New(slog.DiscardHandler), name: "node1", report: false}
	if err := off.Update(context.Background(), nil, 0, row); err != nil {
		t.Fatal(err)
	}
	nc := get()
	if len(nc.Status.BGPInstances) != 0 || len(nc.Status.Conditions) != 0 {
		t.Errorf("status %+v, want none", nc.Status)
	}
	if len(nc.Spec.BGPInstances) != 1 || len(nc.Spec.BGPInstances[0].Peers) != 2 || nc.Annotations[tables.BGPClusterConfigAnnotation] != "cc" {
		t.Errorf("spec %+v annotations %v, want both peers of cc's instance", nc.Spec, nc.Annotations)
	}
}
