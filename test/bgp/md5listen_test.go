package bgp

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/test/netlab"
)

// TCP-MD5 holds for sessions the router opens too: node3's instance
// listens on port 179 (localPort) and its peer config has a password the
// router lacks. The router's connections to the node, unsigned, must be
// dropped by the node's kernel (TCPMD5NotFound), never established. Go
// made its listeners MPTCP by default, and MPTCP sockets refuse
// TCP_MD5SIG: GoBGP's listener then ran without the key and accepted the
// router's unsigned session.
func TestMD5Listening(t *testing.T) {
	ensureAgents(t)
	n3 := nodes[2]
	c := herald.CiliumV2alpha1()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretsNS, Name: "hbgp-md5l"}, StringData: map[string]string{"password": "hbgp-only-node"}}
	if _, err := kube.CoreV1().Secrets(secretsNS).Create(ctxT(t), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Secrets(secretsNS).Delete(ctxT(t), secret.Name, metav1.DeleteOptions{}) })
	pc := peerConfig("hbgp-md5l", "ipv4", secret.Name)
	if _, err := c.CiliumBGPPeerConfigs().Create(ctxT(t), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPPeerConfigs().Delete(ctxT(t), pc.Name, metav1.DeleteOptions{}) })
	cc := &v2alpha1.CiliumBGPClusterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "hbgp-md5l"},
		Spec: v2alpha1.CiliumBGPClusterConfigSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{bgpNodeLabel: "md5l"}},
			BGPInstances: []v2alpha1.CiliumBGPInstance{{Name: "main", LocalASN: ptr.To[int64](nodeASN), LocalPort: ptr.To[int32](179),
				Peers: []v2alpha1.CiliumBGPPeer{{Name: "tor4", PeerAddress: ptr.To(routerHost.IP.String()), PeerASN: ptr.To[int64](routerASN),
					PeerConfigRef: &v2alpha1.PeerConfigReference{Name: pc.Name}}}}},
		},
	}
	if _, err := c.CiliumBGPClusterConfigs().Create(ctxT(t), cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPClusterConfigs().Delete(ctxT(t), cc.Name, metav1.DeleteOptions{}) })
	before := tcpStat(t, n3.host, "TCPMD5NotFound")
	setNodeLabel(t, n3, bgpNodeLabel, "md5l")
	t.Cleanup(func() { setNodeLabel(t, n3, bgpNodeLabel, "main") })

	waitFor(t, "node3's kernel dropping the router's unsigned connections", func() (bool, string) {
		nbrs, err := router.Neighbors()
		if err != nil {
			return false, err.Error()
		}
		// The session of the shared cluster config, without a password,
		// ends when node3 moves; the router's next ones must not come up.
		state := nbrs[n3.host.IP.String()].State
		got := tcpStat(t, n3.host, "TCPMD5NotFound")
		return got > before && state != "Established", fmt.Sprintf("session %s, TCPMD5NotFound %d, was %d", state, got, before)
	})
}

// tcpStat reads one of the kernel's TcpExt counters in the host's namespace.
func tcpStat(t *testing.T, h *netlab.Host, name string) int {
	t.Helper()
	n, err := h.TCPStat(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
