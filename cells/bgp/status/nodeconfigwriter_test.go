package status

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

func TestNoticeReadsAgainWhenSomeoneElseWrote(t *testing.T) {
	written := func(rv string) *v2alpha1.CiliumBGPNodeConfig {
		return &v2alpha1.CiliumBGPNodeConfig{ObjectMeta: metav1.ObjectMeta{Name: "node1", ResourceVersion: rv}}
	}
	none := &v2alpha1.CiliumBGPNodeConfig{}
	for _, tc := range []struct {
		name      string
		cur       *v2alpha1.CiliumBGPNodeConfig
		seen      string // resourceVersion as reflected, "" for none
		readAgain bool
	}{
		{"nothing read yet", nil, "5", true},
		{"its own write shows up", written("5"), "5", false},
		{"none written, none shown", none, "", false},
		{"deleted by someone else", written("5"), "", true},
		{"changed by someone else (or an older version still on its way)", written("5"), "7", true},
		{"created by someone else", none, "3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &nodeConfigWriter{name: "node1", cur: tc.cur}
			w.notice(tc.seen)
			if got := w.cur == nil; got != tc.readAgain {
				t.Errorf("reads again = %v, want %v", got, tc.readAgain)
			}
		})
	}
}

func TestOwnedByTheNode(t *testing.T) {
	if got := owners("node1", ""); got != nil {
		t.Errorf("owners of an unseen Node = %v, want none (leave them be)", got)
	}
	got := owners("node1", "u-1")
	if len(got) != 1 || got[0].Kind != "Node" || got[0].APIVersion != "v1" || got[0].Name != "node1" || got[0].UID != "u-1" {
		t.Errorf("owners = %+v, want the Node node1 with uid u-1", got)
	}
	if got[0].BlockOwnerDeletion != nil || got[0].Controller != nil {
		t.Errorf("owners = %+v: blocking the Node's deletion would need delete rights on Nodes", got)
	}
}

// The object names its cluster config, and says it is contested while
// several select the node; others' labels and annotations stay.
func TestOwnerMeta(t *testing.T) {
	theirs := map[string]string{"team": "net"}
	for _, tt := range []struct {
		name                   string
		labels, annotations    map[string]string
		clusterConfig          string
		contested              bool
		wantLabels, wantAnnots map[string]string
	}{
		{"new, one cluster config", nil, nil, "cc", false,
			map[string]string{"app.kubernetes.io/managed-by": "herald"}, map[string]string{"bgp.herald.io/cluster-config": "cc"}},
		{"contested", theirs, theirs, "cc", true,
			map[string]string{"team": "net", "app.kubernetes.io/managed-by": "herald", "bgp.herald.io/contested": "true"},
			map[string]string{"team": "net", "bgp.herald.io/cluster-config": "cc"}},
		{"no longer contested, another owner", map[string]string{"bgp.herald.io/contested": "true"}, map[string]string{"bgp.herald.io/cluster-config": "cc"}, "dd", false,
			map[string]string{"app.kubernetes.io/managed-by": "herald"}, map[string]string{"bgp.herald.io/cluster-config": "dd"}},
		{"no instances", nil, map[string]string{"bgp.herald.io/cluster-config": "cc"}, "", false,
			map[string]string{"app.kubernetes.io/managed-by": "herald"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			labels, annots := ownerMeta(tt.labels, tt.annotations, tt.clusterConfig, tt.contested)
			if !reflect.DeepEqual(labels, tt.wantLabels) || !reflect.DeepEqual(annots, tt.wantAnnots) {
				t.Errorf("labels %v annotations %v, want %v %v", labels, annots, tt.wantLabels, tt.wantAnnots)
			}
		})
	}
	if theirs["bgp.herald.io/contested"] != "" || len(theirs) != 1 {
		t.Errorf("the current labels were changed in place: %v", theirs)
	}
}
