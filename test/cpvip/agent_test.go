package cpvip

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/pki"
)

// TestAgentArgv pins the agent's command line: the contract of
// `herald-agent control-plane-vip` the proofs run.
func TestAgentArgv(t *testing.T) {
	cp := &ControlPlane{
		opts:           Options{AgentBin: "/bin/herald-agent", AgentArgs: []string{"--log-level=debug"}},
		PeerSecretFile: "/w/peer-secret",
		pki:            pki.Dir("/w/pki"),
	}
	for i, name := range NodeNames {
		ip := netip.AddrFrom4([4]byte{198, 18, 40, byte(11 + i)})
		cp.Nodes = append(cp.Nodes, &CPNode{Name: name, Dir: "/w/" + name, BPFRoot: "/w/" + name + "/bpffs",
			Host: &netlab.Host{Name: name, Netns: Prefix + name, IP: ip}})
	}
	got := cp.agentArgv(cp.Nodes[1], []string{"--fence-window=1s"})
	want := []string{"/bin/herald-agent", "control-plane-vip",
		"--node-name=cp2",
		"--vips=198.18.40.100,fd00:18:0:40::100",
		"--peers=cp1=198.18.40.11,cp2=198.18.40.12,cp3=198.18.40.13",
		"--peer-secret-file=/w/peer-secret",
		"--readyz-url=https://127.0.0.1:6443/readyz",
		"--readyz-ca-file=/w/pki/ca.crt",
		"--devices=eth0",
		"--bpf-root=/w/cp2/bpffs",
		"--health-serve-addr=198.18.40.12:9967",
		"--prometheus-serve-addr=198.18.40.12:9968",
		"--dbg-socket=/w/cp2/dbg.sock",
		"--log-level=debug",
		"--fence-window=1s",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("agent command line:\n got %s\nwant %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}
