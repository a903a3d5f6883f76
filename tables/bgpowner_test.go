package tables

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

func TestBGPOwnerOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cc := func(name string, age int, rack string) *BGPClusterConfig {
		c := &BGPClusterConfig{Name: name, CreationTimestamp: t0.Add(-time.Duration(age) * time.Hour)}
		if rack != "" {
			c.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"rack": rack}}
		}
		return c
	}
	rackA := map[string]string{"rack": "a"}
	for _, tt := range []struct {
		name     string
		configs  []*BGPClusterConfig
		labels   map[string]string
		recorded string
		want     string
	}{
		{"none selects the node", []*BGPClusterConfig{cc("a", 1, "b")}, rackA, "", ""},
		{"one selects it", []*BGPClusterConfig{cc("z", 1, "a"), cc("b", 5, "b")}, rackA, "", "z"},
		{"the recorded owner keeps it, though younger and later by name", []*BGPClusterConfig{cc("a", 5, ""), cc("z", 1, "a")}, rackA, "z", "z"},
		{"no recorded owner: the oldest", []*BGPClusterConfig{cc("a", 1, ""), cc("z", 5, "a")}, rackA, "", "z"},
		{"the recorded owner no longer selects it: the oldest of the others", []*BGPClusterConfig{cc("a", 1, ""), cc("m", 3, ""), cc("z", 5, "b")}, rackA, "z", "m"},
		{"the recorded owner is gone: the oldest", []*BGPClusterConfig{cc("a", 1, ""), cc("m", 3, "")}, rackA, "gone", "m"},
		{"as old: the first by name", []*BGPClusterConfig{cc("b", 2, ""), cc("a", 2, "")}, rackA, "", "a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := BGPOwnerOf(tt.configs, tt.labels, tt.recorded); got != tt.want {
				t.Errorf("owner %q, want %q", got, tt.want)
			}
		})
	}
}

// The owner a node config names: Herald's annotation, else the owner
// reference Cilium's operator writes.
func TestBGPNodeConfigOwner(t *testing.T) {
	ccRef := metav1.OwnerReference{APIVersion: "cilium.io/v2", Kind: "CiliumBGPClusterConfig", Name: "from-cilium"}
	nodeRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node1"}
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		refs        []metav1.OwnerReference
		want        string
	}{
		{"Herald's, owned by the Node", map[string]string{BGPClusterConfigAnnotation: "mine"}, []metav1.OwnerReference{nodeRef}, "mine"},
		{"Cilium's operator's", nil, []metav1.OwnerReference{ccRef}, "from-cilium"},
		{"neither", nil, []metav1.OwnerReference{nodeRef}, ""},
	} {
		c := &v2alpha1.CiliumBGPNodeConfig{ObjectMeta: metav1.ObjectMeta{Name: "node1", Annotations: tt.annotations, OwnerReferences: tt.refs}}
		if got := BGPNodeConfigFromK8s(c).ClusterConfig; got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if got := BGPNodeOwnerFromK8s(c); got.Node != "node1" || got.ClusterConfig != tt.want {
			t.Errorf("%s: %+v, want node1 held by %q", tt.name, got, tt.want)
		}
	}
}
