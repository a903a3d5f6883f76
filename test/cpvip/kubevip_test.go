package cpvip

import (
	"context"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/cluster"
)

// TestKubeVipHarness checks the benchmark's kube-vip contender on the
// harness (what kube-vip does is the benchmark's to measure): the three
// kube-vips elect one owner, which alone answers the VIP; when its
// kube-vip is killed another node takes over; started again, it leaves
// the VIP to that node; and stopped, the kube-vips leave no VIP behind,
// for the next contender.
func TestKubeVipHarness(t *testing.T) {
	bin, err := BuildKubeVip(cluster.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	cp := upT(t, Options{})
	d := newKubeVipDaemons(bin, KubeVipDefaults)
	if err := d.Start(cp); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(d.Logs(cp))
		}
		if !stopped {
			_ = d.Stop(cp)
		}
	})
	owner := kubeVipSettle(t, cp, d)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	w, err := cp.WatchVIP(ctx, VIP, WatchEvery)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if err := d.Kill(owner); err != nil {
		t.Fatal(err)
	}
	for time.Since(at) < 30*time.Second {
		if _, ok := w.TakenOver(at, owner.MAC()); ok {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec := w.Stop()
	gap, ok := rec.Failover(at, owner.MAC())
	if !ok {
		t.Fatalf("nobody took the VIP over from %s's killed kube-vip:\n%s", owner.Name, rec.Format(cp.NodeByMAC))
	}
	t.Logf("%s's kube-vip killed: another node answered after %s; %d requests answered by two MACs", owner.Name, gap.Round(time.Millisecond), len(rec.Doubles))
	if err := d.Restart(owner); err != nil {
		t.Fatal(err)
	}
	if next := kubeVipSettle(t, cp, d); next == owner {
		t.Errorf("%s owns the VIP again after its kube-vip restarted", owner.Name)
	}

	stopped = true
	if err := d.Stop(cp); err != nil {
		t.Fatal(err)
	}
	w, err = cp.WatchVIP(ctx, VIP, WatchEvery)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if rec := w.Stop(); rec.OwnerAt(time.Now()) != "" {
		t.Errorf("stopped, the kube-vips left the VIP answered:\n%s", rec.Format(cp.NodeByMAC))
	}
}

// kubeVipSettle waits until every kube-vip runs and has seen the Lease's
// holder, and one node alone answers the VIP; it returns that node.
func kubeVipSettle(t *testing.T, cp *ControlPlane, d *kubeVipDaemons) *CPNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var why error
	for ; ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		if why = d.Settled(cp); why != nil {
			continue
		}
		if why = soleOwner(ctx, cp); why != nil {
			continue
		}
		w, err := cp.WatchVIP(ctx, VIP, WatchEvery)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		owner := cp.Node(cp.NodeByMAC(w.Current()))
		w.Stop()
		if owner != nil {
			return owner
		}
	}
	t.Fatalf("kube-vip did not settle: %v", why)
	return nil
}
