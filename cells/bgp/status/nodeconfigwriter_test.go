package status

import (
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
