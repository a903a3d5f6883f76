package cpvip

import (
	"context"
	"os"
	"testing"
)

// upT brings the control plane up for a test, which needs root, and
// tears it down when the test ends; the daemons' logs are printed and
// kept when it failed.
func upT(t *testing.T, o Options) *ControlPlane {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root (network namespaces, eBPF, AF_PACKET, nftables); run it as root, as make test does")
	}
	cp, err := Up(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			cp.KeepLogs = true
			t.Log(cp.Logs(60))
		}
		if err := cp.Down(); err != nil {
			t.Errorf("Down: %v", err)
		}
	})
	return cp
}
