// Package faults tests what Herald owns under faults, against a real
// kube-apiserver: three agents in their own network namespaces on a test
// LAN (test/netlab), the API server in the root namespace. The allocating
// agent is frozen (SIGSTOP/SIGCONT), killed (SIGKILL) and cut off the
// network while Services come and go; the API server is frozen and
// restarted. Throughout, a watch checks every Service change (test/lbwatch):
// no address on two Services, no Service whose address changes.
//
// Tests check outcomes, never durations; the times things took are logged.
// Needs root. Everything is named hf-* and removed at the end (and at the
// start, if an interrupted run left it).
package faults

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/suite"
)

const (
	prefix   = "hf-"
	leaseNS  = metav1.NamespaceSystem
	poolName = "hf-pool"
	// poolCIDR is data in the API server only (L2 is off: nothing is ever
	// announced or sent to these addresses).
	poolCIDR = "198.19.0.0/16"
	// healthPort is every agent's --health-serve-addr port, on its LAN IP.
	healthPort = 9965
	// timeout bounds every wait; generous, tests check outcomes.
	timeout = 2 * time.Minute
)

var (
	subnet    = netip.MustParsePrefix("198.18.2.0/24")
	nodeNames = []string{"node1", "node2", "node3"}
)

// Shared by all tests; set up by TestMain.
var (
	testCluster *cluster.Cluster
	kube        kubernetes.Interface
	herald      versioned.Interface
	lan         *netlab.LAN
	agents      []*agentproc.Agent
)

func TestMain(m *testing.M) {
	suite.Main(m, "network namespaces", suite.Options{Name: "faults", Prefix: prefix, Subnet: subnet,
		Hosts: nodeNames, Namespace: leaseNS}, setup)
}

func setup(env *suite.Env) error {
	testCluster, kube, herald, lan = env.Cluster, env.Cluster.Client, env.Herald, env.LAN
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.CreateLBPool(ctx, poolName, poolCIDR); err != nil {
		return err
	}
	for _, name := range nodeNames {
		h := lan.Host(name)
		agents = append(agents, agentproc.New(agentproc.Options{
			Name: name, Netns: h.Netns, Dir: filepath.Join(env.Work, name),
			AgentBin: env.AgentBin, DbgBin: env.DbgBin,
			Kubeconfig: testCluster.Kubeconfig, Namespace: leaseNS,
			HealthAddr: fmt.Sprintf("%s:%d", h.IP, healthPort),
		}))
	}
	return env.StartAgents(agents...)
}
