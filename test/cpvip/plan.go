package cpvip

import (
	"net/netip"
	"time"
)

// The harness's fixed names and addresses: one run at a time per machine
// (Up takes LockName).
const (
	// Prefix names the namespaces (hcp-cp1, ..., hcp-client, hcp-lan) and
	// the run's work directory under the system's temporary directory.
	Prefix = "hcp-"
	// LockName is the netlab.Lock Up holds until Down.
	LockName = "cpvip"

	// ClientName is the host the observers run in.
	ClientName = "client"
	clientNum  = 50

	// APIServerPort is kube-apiserver's secure port on every node.
	APIServerPort = 6443
	// EtcdClientPort and EtcdPeerPort are etcd's, on the node's LAN
	// address (the client port on 127.0.0.1 too).
	EtcdClientPort = 2379
	EtcdPeerPort   = 2380
	// AgentHealthPort and AgentMetricsPort are the agent's
	// --health-serve-addr and --prometheus-serve-addr ports, on the
	// node's LAN address.
	AgentHealthPort  = 9967
	AgentMetricsPort = 9968
)

var (
	// Subnet and Subnet6 number the LAN: cp1..cp3 are .11-.13, the client
	// .50.
	Subnet  = netip.MustParsePrefix("198.18.40.0/24")
	Subnet6 = netip.MustParsePrefix("fd00:18:0:40::/64")
	// VIP and VIP6 are the control plane's virtual addresses.
	VIP  = netip.MustParsePrefix("198.18.40.100/32").Addr()
	VIP6 = netip.MustParsePrefix("fd00:18:0:40::100/128").Addr()
	// NodeNames are the control-plane hosts, in LAN order.
	NodeNames = []string{"cp1", "cp2", "cp3"}

	// serviceCIDR is the cluster's Service range: nothing is sent there,
	// it only has to be a range of the test networks.
	serviceCIDR = netip.MustParsePrefix("198.18.41.0/24")
)

// readyTimeout bounds how long Up waits for etcd and the API servers.
const readyTimeout = 3 * time.Minute
