package havip

import (
	"context"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/cpvip"
	"github.com/heraldlb/herald/test/realcluster"
)

// Herald's DaemonSet, installed with helm as users do, announces a
// LoadBalancer IP with its own responder on the same devices of the same
// nodes: both addresses are answered, each by one MAC, and the
// control-plane VIP fails over while the Service's IP stays where it is.
const besideFixtures = `
apiVersion: cilium.io/v2alpha1
kind: CiliumLoadBalancerIPPool
metadata: {name: beside}
spec:
  blocks: [{cidr: 198.18.16.64/28}]
---
apiVersion: cilium.io/v2alpha1
kind: CiliumL2AnnouncementPolicy
metadata: {name: beside}
spec:
  loadBalancerIPs: true
  interfaces: [eth0]
---
apiVersion: v1
kind: Service
metadata: {name: beside, namespace: default}
spec:
  type: LoadBalancer
  ports: [{port: 80}]
`

func TestBesideTheDaemonSet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// L2 announcements only; no endpoint behind the Service, so it is
	// announced as the option says.
	if _, err := cl.RunHelm(ctx, "install", realcluster.HeraldRelease, realcluster.ChartDir(), "--namespace", realcluster.HeraldNamespace,
		"--set", "l2announcements.enabled=true", "--set", "devices={eth0}", "--set", "enableNoServiceEndpointsRoutable=true"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := cl.RunKubectlStdin(context.Background(), besideFixtures, "delete", "--ignore-not-found", "-f", "-"); err != nil {
			t.Error(err)
		}
		if _, err := cl.RunHelm(context.Background(), "uninstall", realcluster.HeraldRelease, "--namespace", realcluster.HeraldNamespace, "--wait"); err != nil {
			t.Error(err)
		}
	}()
	if err := cl.WaitDaemonSet(ctx, realcluster.HeraldNamespace, "herald"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.RunKubectlStdin(ctx, besideFixtures, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	var lbIP netip.Addr
	for ctx.Err() == nil && !lbIP.IsValid() {
		svc, err := cl.Client.CoreV1().Services("default").Get(ctx, "beside", metav1.GetOptions{})
		if err == nil && len(svc.Status.LoadBalancer.Ingress) > 0 {
			lbIP, _ = netip.ParseAddr(svc.Status.LoadBalancer.Ingress[0].IP)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !lbIP.IsValid() {
		t.Fatal("the Service got no IP")
	}
	waitSettled(t, ctx)
	lb, err := cpvip.WatchVIPFrom(ctx, cl.ClientHost, lbIP, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	vip, err := cpvip.WatchVIPFrom(ctx, cl.ClientHost, realcluster.ControlPlaneVIP, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil && lb.Current() == "" {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	lbOwner, owner := lb.Current(), nodeByMAC(vip.Current())
	if owner == nil {
		t.Fatalf("the control-plane VIP is answered by %q", vip.Current())
	}
	at := time.Now()
	if err := killAgent(owner); err != nil {
		t.Fatal(err)
	}
	for time.Since(at) < 10*time.Second && vip.Current() == macOf(owner) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	lbRec, vipRec := lb.Stop(), vip.Stop()
	if len(lbRec.Doubles)+len(vipRec.Doubles) > 0 {
		t.Errorf("requests answered by two MACs:\n%s\n%s", lbRec.Format(name), vipRec.Format(name))
	}
	if gap, ok := vipRec.Failover(at, macOf(owner)); !ok {
		t.Errorf("the control-plane VIP stayed with %s:\n%s", owner.Name, vipRec.Format(name))
	} else {
		t.Logf("the control-plane VIP went from %s to %s in %s", owner.Name, name(vipRec.OwnerAt(time.Now())), gap.Round(time.Millisecond))
	}
	if spans := lbRec.AnsweredBy(); len(spans) != 1 || spans[0].Answer != lbOwner {
		t.Errorf("the Service's IP %s was not answered by %s throughout:\n%s", lbIP, name(lbOwner), lbRec.Format(name))
	}
	t.Logf("the Service's IP %s answered by %s (the DaemonSet) throughout", lbIP, name(lbOwner))
}
