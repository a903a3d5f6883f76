package bgp

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// The peer config's BFD fields reach FRR with their meaning, when they
// differ from each other and from the router's (100 ms both ways × 3):
// FRR shows the node's receive interval, transmit interval and detect
// multiplier as its remote timers, and the node negotiates as RFC 5880
// §6.8.2 and §6.8.4 say: it sends at the longer of its transmit interval
// and the router's receive interval (250 ms), and declares the router down
// after the router's multiplier × the longer of the router's transmit
// interval and its own receive interval (3 × 150 ms).
func TestBFDTimersAsFRRSeesThem(t *testing.T) {
	const rx, tx, mult = 150, 250, 5
	ensureAgents(t)
	setPeerConfigsBFD(t, &v2alpha1.CiliumBGPBFD{ReceiveIntervalMilliseconds: ptr.To[int32](rx),
		TransmitIntervalMilliseconds: ptr.To[int32](tx), DetectMultiplier: ptr.To[int32](mult)})
	t.Cleanup(func() { setBFD(t, false) })
	waitFor(t, "FRR to see the node's BFD timers, and the node to negotiate from them", func() (bool, string) {
		peers, err := router.BFDPeers()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range sessionAddrs() {
			p := peers[a]
			if p.Status != "up" || p.RemoteReceiveInterval != rx || p.RemoteTransmitInterval != tx || p.RemoteDetectMultiplier != mult {
				return false, fmt.Sprintf("FRR's session with %s: %+v", a, p)
			}
		}
		for _, n := range nodes {
			sessions, err := tableOf[tables.BGPBFDSession](n, tables.BGPBFDSessionsTableName)
			if err != nil {
				return false, err.Error()
			}
			if len(sessions) != 2 {
				return false, fmt.Sprintf("%s has %d BFD sessions: %+v", n.Name, len(sessions), sessions)
			}
			for _, s := range sessions {
				if s.State != tables.BFDStateUp || s.TxInterval != tx*time.Millisecond || s.DetectTime != bfdMult*rx*time.Millisecond {
					return false, fmt.Sprintf("%s: %+v", n.Name, s)
				}
			}
		}
		return true, ""
	})
}

// passiveProfile is an FRR BFD profile that waits for the node to speak.
const passiveProfile = "hbgp-passive"

// passiveMode in a peer config keeps the node silent until the router
// speaks, as FRR sees it: with FRR passive too, the IPv6 sessions (peer
// config hbgp-v6, active) come up, while FRR has not received a single
// packet on the IPv4 ones (hbgp-v4, passive), which stay down; once FRR
// speaks first, those come up as well.
func TestBFDPassiveModeAsFRRSeesIt(t *testing.T) {
	ensureAgents(t)
	if err := router.Configure("bfd", " profile "+passiveProfile, "  passive-mode", " exit", "exit"); err != nil {
		t.Fatal(err)
	}
	// The node is passive from its sessions' start: hbgp-v4 gets bfd
	// with passiveMode before FRR runs BFD with anyone.
	t.Cleanup(func() { setBFD(t, false) })
	setPeerConfigBFD(t, peerConfigV4, &v2alpha1.CiliumBGPBFD{PassiveMode: ptr.To(true)})
	setPeerConfigBFD(t, peerConfigV6, &v2alpha1.CiliumBGPBFD{})
	var lines []string
	for _, a := range sessionAddrs() {
		lines = append(lines, fmt.Sprintf("neighbor %s bfd profile %s", a, passiveProfile))
	}
	if err := router.Configure(append([]string{fmt.Sprintf("router bgp %d", routerASN)}, lines...)...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the active (IPv6) sessions up, the passive (IPv4) ones silent", func() (bool, string) {
		peers, err := router.BFDPeers()
		if err != nil {
			return false, err.Error()
		}
		counters, err := router.BFDCounters()
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nodes {
			v4, v6 := n.host.IP.String(), n.host.IP6.String()
			if counters[v4].ControlIn != 0 || peers[v4].Status == "up" {
				t.Fatalf("FRR heard from passive %s: %+v, %+v", v4, peers[v4], counters[v4])
			}
			if peers[v6].Status != "up" || counters[v6].ControlIn < 3 {
				return false, fmt.Sprintf("%s: %+v, %+v", v6, peers[v6], counters[v6])
			}
		}
		return true, ""
	})
	// FRR active: the passive side answers.
	if err := router.Configure("bfd", " profile "+passiveProfile, "  no passive-mode", " exit", "exit"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the passive sessions up once FRR speaks", func() (bool, string) {
		peers, err := router.BFDPeers()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range sessionAddrs() {
			if peers[a].Status != "up" {
				return false, fmt.Sprintf("%s: %+v", a, peers[a])
			}
		}
		return true, ""
	})
}

// setPeerConfigBFD sets spec.bfd of a shared peer config.
func setPeerConfigBFD(t *testing.T, name string, bfd *v2alpha1.CiliumBGPBFD) {
	t.Helper()
	pc, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Get(ctxT(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pc.Spec.BFD = bfd
	if _, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Update(ctxT(t), pc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
