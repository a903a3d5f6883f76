package havip

import (
	"context"
	"net"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/realcluster"
)

// The three API servers started at once, with the control-plane VIP's
// static Pods already running: the VIP was answered, by a control-plane
// node, and the kubelets registered through it.
func TestColdStart(t *testing.T) {
	cs := cl.ColdStart
	if cs == nil {
		t.Fatal("no cold start measured")
	}
	owner := ""
	for _, n := range cl.ControlPlaneNodes() {
		if mac, err := n.MAC(); err == nil && mac.String() == cs.FirstAnswerMAC {
			owner = n.Name
		}
	}
	if owner == "" {
		t.Fatalf("the VIP was first answered by %s, no control-plane node's MAC", cs.FirstAnswerMAC)
	}
	t.Logf("API servers started at once; first ready: %s after %s; the VIP answered by %s %s after that",
		cs.FirstReadyNode, cs.FirstReady.Sub(cs.Started).Round(time.Millisecond), owner, cs.FirstAnswer.Sub(cs.FirstReady).Round(time.Millisecond))
	if want := "https://" + net.JoinHostPort(realcluster.ControlPlaneVIP.String(), "6443"); cl.Server != want {
		t.Fatalf("the cluster's server is %s, not the VIP", cl.Server)
	}
	nodes, err := cl.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != len(cl.Nodes) {
		t.Fatalf("%d nodes registered through the VIP, want %d", len(nodes.Items), len(cl.Nodes))
	}
}
