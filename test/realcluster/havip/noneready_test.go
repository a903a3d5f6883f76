package havip

import (
	"context"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/realcluster"
)

// No API server ready anywhere: the last owner keeps the VIP
// (Documentation/control-plane-vip.md, "No API server ready anywhere");
// the first node whose API server is ready again takes it.
func TestNoAPIServerReadyKeepsLastOwner(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w, owner := watchOwner(t, ctx, 20*time.Millisecond)
	ownerMAC := w.Current()
	defer func() {
		for _, n := range cl.ControlPlaneNodes() {
			_ = cl.StartAPIServer(n)
		}
	}()
	// The owner's last: the others' first, so that its release meets
	// nobody eligible.
	for _, n := range cl.ControlPlaneNodes() {
		if n != owner {
			if err := cl.KillAPIServer(n); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(time.Second)
	if err := cl.KillAPIServer(owner); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	time.Sleep(3 * time.Second)
	if cur := w.Current(); cur != ownerMAC {
		w.Stop()
		t.Fatalf("with no API server ready the VIP is answered by %q, want the last owner %s kept", name(cur), owner.Name)
	}
	// Another node's API server comes back first: the VIP goes there.
	var next *realcluster.Node
	for _, n := range cl.ControlPlaneNodes() {
		if n != owner {
			next = n
			break
		}
	}
	if err := cl.StartAPIServer(next); err != nil {
		t.Fatal(err)
	}
	nextMAC, _ := next.MAC()
	for time.Since(down) < 2*time.Minute && w.Current() != nextMAC.String() {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	rec := w.Stop()
	if len(rec.Doubles) > 0 {
		t.Errorf("%d requests answered by two MACs:\n%s", len(rec.Doubles), rec.Format(name))
	}
	if got := rec.OwnerAt(time.Now()); got != nextMAC.String() {
		t.Fatalf("after %s's API server came back the VIP is answered by %q:\n%s", next.Name, name(got), rec.Format(name))
	}
	silent := rec.LongestSilence()
	t.Logf("no API server ready for 3 s: %s kept the VIP (longest unanswered %s); %s took it once its API server was ready", owner.Name, silent.Round(time.Millisecond), next.Name)
}
