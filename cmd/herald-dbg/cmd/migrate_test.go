package cmd

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/heraldlb/herald/cmd/herald-dbg/migrate"
)

// TestReadMetalLBOldPeers: a MetalLB that serves BGPPeer at v1beta1 only
// (before v0.13.10) has its peers read at that version, not skipped as if
// it had none.
func TestReadMetalLBOldPeers(t *testing.T) {
	peer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "metallb.io/v1beta1", "kind": "BGPPeer",
		"metadata": map[string]any{"name": "tor", "namespace": "metallb-system"},
		"spec":     map[string]any{"myASN": int64(64512), "peerASN": int64(64513), "peerAddress": "198.18.0.1"},
	}}
	listKinds := map[schema.GroupVersionResource]string{}
	for _, versions := range metallbResources {
		for _, gvr := range versions {
			listKinds[gvr] = "List"
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, peer)
	dyn.PrependReactor("list", "bgppeers", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Version == "v1beta2" {
			return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), "")
		}
		return false, nil, nil
	})
	var in migrate.Input
	if err := readMetalLB(context.Background(), &in, nil, dyn, "", strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	if len(in.Peers) != 1 || in.Peers[0].Spec.PeerAddress != "198.18.0.1" {
		t.Fatalf("peers %+v, want the v1beta1 peer tor", in.Peers)
	}
}
