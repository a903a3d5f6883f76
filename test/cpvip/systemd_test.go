package cpvip

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
)

// unitName is the shipped unit, install/control-plane/<unitName>.service.
const unitName = "herald-control-plane-vip"

// TestSystemdUnit installs the shipped systemd unit, unchanged, as
// Documentation/control-plane-vip.md says (the settings as files in
// /etc/herald/control-plane-vip/config/, the secret beside them,
// systemctl enable --now), under systemd on each of the three nodes, and
// checks that its sandbox leaves the agent what it needs (the VIPs
// answered, the API servers reached through them, herald-dbg on its
// socket), that systemd starts a killed agent again while another node
// takes over, and that systemctl stop hands the VIPs over.
func TestSystemdUnit(t *testing.T) {
	cp := upT(t, Options{})
	bin, dbg, err := agentproc.Build(cluster.RepoRoot(), filepath.Join(cp.Dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile(filepath.Join(cluster.RepoRoot(), "install", "control-plane", unitName+".service"))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := os.ReadFile(cp.PeerSecretFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(cp.pki.CA())
	if err != nil {
		t.Fatal(err)
	}
	var peers []string
	for _, n := range cp.Nodes {
		peers = append(peers, n.Name+"="+n.Host.IP.String())
	}
	sd := map[*CPNode]*Systemd{}
	t.Cleanup(func() {
		for n, s := range sd {
			if t.Failed() {
				t.Log(s.Journal(unitName, 40))
			}
			if err := s.Stop(); err != nil {
				t.Errorf("stopping systemd on %s: %v", n.Name, err)
			}
		}
	})
	for _, n := range cp.Nodes {
		const dir = "herald/control-plane-vip/"
		s, err := n.BootSystemd(map[string][]byte{
			"systemd/system/" + unitName + ".service": unit,
			dir + "peer-secret":                       secret,
			dir + "ca.crt":                            ca,
			dir + "config/vips":                       []byte(VIP.String() + "," + VIP6.String()),
			dir + "config/peers":                      []byte(strings.Join(peers, ",")),
			dir + "config/peer-secret-file":           []byte("/etc/" + dir + "peer-secret"),
			dir + "config/readyz-ca-file":             []byte("/etc/" + dir + "ca.crt"),
			// Its host name is the machine's: the nodes share one.
			dir + "config/node-name": []byte(n.Name),
		}, bin, dbg)
		if err != nil {
			t.Fatal(err)
		}
		sd[n] = s
		for _, args := range [][]string{{"daemon-reload"}, {"enable", "--now", unitName}} {
			if out, err := s.Systemctl(args...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		}
	}

	t.Run("the VIPs are answered", func(t *testing.T) {
		checkOneOwner(t, cp)
		for n, s := range sd {
			if got := s.Show(unitName, "UnitFileState") + " " + s.Show(unitName, "ActiveState"); got != "enabled active" {
				t.Errorf("%s: the unit is %q, want enabled and active", n.Name, got)
			}
		}
	})
	t.Run("the API servers through the VIP", func(t *testing.T) { checkAPIThroughVIP(t, cp) })
	t.Run("herald-dbg on the unit's socket", func(t *testing.T) {
		owner := settle(t, cp)
		for n, s := range sd {
			out, err := s.In("herald-dbg", "--socket", "/run/herald/control-plane.sock", "statedb", "control-plane-vip")
			want := "standby: " + owner.Name + " owns the VIPs"
			if n == owner {
				want = "owner: a quorum granted this node"
			}
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("%s: herald-dbg statedb control-plane-vip does not say %q: %v\n%s", n.Name, want, err, out)
			}
		}
	})
	t.Run("systemd starts a killed agent again", func(t *testing.T) {
		var restarts string
		checkFailover(t, cp, func(n *CPNode) error {
			restarts = sd[n].Show(unitName, "NRestarts")
			_, err := sd[n].Systemctl("kill", "--signal=SIGKILL", unitName)
			return err
		}, func(n *CPNode) error {
			return waitUnit(sd[n], func() bool {
				return sd[n].Show(unitName, "ActiveState") == "active" && sd[n].Show(unitName, "NRestarts") != restarts
			})
		})
	})
	t.Run("systemctl stop hands the VIPs over", func(t *testing.T) {
		checkFailover(t, cp, func(n *CPNode) error {
			_, err := sd[n].Systemctl("stop", unitName)
			return err
		}, func(n *CPNode) error {
			if got := sd[n].Show(unitName, "ActiveState"); got != "inactive" {
				t.Errorf("%s: the stopped unit is %q", n.Name, got)
			}
			_, err := sd[n].Systemctl("start", unitName)
			return err
		})
	})
}

// waitUnit waits up to a minute for ok, and says what the unit logged if
// it does not come.
func waitUnit(s *Systemd, ok func() bool) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ok() {
			return nil
		}
	}
	return fmt.Errorf("%s: the unit did not come back:\n%s", s.Node.Name, s.Journal(unitName, 30))
}

// checkAPIThroughVIP lists the Nodes through the IPv4 VIP for a second
// from the client's namespace: every request must succeed.
func checkAPIThroughVIP(t *testing.T, cp *ControlPlane) {
	settle(t, cp)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	l, err := cp.APILoop(ctx, cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	rec := l.Stop()
	if len(rec.Requests) == 0 || rec.Failed() > 0 {
		t.Errorf("through the VIP: %d requests, %d failed: %v", len(rec.Requests), rec.Failed(), rec.Windows())
	}
}
