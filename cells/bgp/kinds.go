package bgp

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/cells/internal/k8sreflect"
	"github.com/heraldlb/herald/tables"
)

// kinds are the Kubernetes kinds only BGP reads: the ground floor
// reflects them into their tables while a cell asks for them.
var kinds = cell.Module(
	"bgp-kinds",
	"Kubernetes kinds of the BGP control plane",

	cell.ProvidePrivate(
		tables.NewBGPClusterConfigsTable, tables.NewBGPPeerConfigsTable, tables.NewBGPAdvertisementsTable,
		tables.NewBGPNodeOverridesTable, tables.NewBGPSecretsTable, tables.NewBGPNodeConfigsTable,
		tables.NewBGPNodeOwnersTable,
	),
	cell.Provide(
		statedb.RWTable[*tables.BGPClusterConfig].ToTable,
		statedb.RWTable[*tables.BGPPeerConfig].ToTable,
		statedb.RWTable[*tables.BGPAdvertisement].ToTable,
		statedb.RWTable[*tables.BGPNodeOverride].ToTable,
		statedb.RWTable[*tables.BGPSecret].ToTable,
		statedb.RWTable[*tables.BGPNodeConfig].ToTable,
		statedb.RWTable[*tables.BGPNodeOwner].ToTable,
		clusterConfigKind, peerConfigKind, advertisementKind, nodeOverrideKind, secretKind, nodeConfigKind, nodeOwnerKind,
	),
)

func clusterConfigKind(t statedb.RWTable[*tables.BGPClusterConfig]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumBGPClusterConfig, *tables.BGPClusterConfig]{
		Name: "bgp-cluster-configs", Example: &v2alpha1.CiliumBGPClusterConfig{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2alpha1().CiliumBGPClusterConfigs(), "")
		},
		Transform: tables.BGPClusterConfigFromK8s,
	})
}

func peerConfigKind(t statedb.RWTable[*tables.BGPPeerConfig]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumBGPPeerConfig, *tables.BGPPeerConfig]{
		Name: "bgp-peer-configs", Example: &v2alpha1.CiliumBGPPeerConfig{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2alpha1().CiliumBGPPeerConfigs(), "")
		},
		Transform: tables.BGPPeerConfigFromK8s,
	})
}

func advertisementKind(t statedb.RWTable[*tables.BGPAdvertisement]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumBGPAdvertisement, *tables.BGPAdvertisement]{
		Name: "bgp-advertisements", Example: &v2alpha1.CiliumBGPAdvertisement{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2alpha1().CiliumBGPAdvertisements(), "")
		},
		Transform: tables.BGPAdvertisementFromK8s,
	})
}

func nodeOverrideKind(t statedb.RWTable[*tables.BGPNodeOverride]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumBGPNodeConfigOverride, *tables.BGPNodeOverride]{
		Name: "bgp-node-overrides", Example: &v2alpha1.CiliumBGPNodeConfigOverride{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2alpha1().CiliumBGPNodeConfigOverrides(), "")
		},
		Transform: tables.BGPNodeOverrideFromK8s,
	})
}

// Asked for in the BGP secrets namespace: the Role the chart gives the
// agent allows no more.
func secretKind(t statedb.RWTable[*tables.BGPSecret]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*corev1.Secret, *tables.BGPSecret]{
		Name: "bgp-secrets", Example: &corev1.Secret{}, Namespaced: true,
		ListWatch: func(c k8sreflect.Clients, ns string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Kube.CoreV1().Secrets(ns), "")
		},
		Transform: tables.BGPSecretFromK8s,
	})
}

// Only this node's CiliumBGPNodeConfig, which its agent writes.
func nodeConfigKind(t statedb.RWTable[*tables.BGPNodeConfig]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumBGPNodeConfig, *tables.BGPNodeConfig]{
		Name: "bgp-node-configs", Example: &v2alpha1.CiliumBGPNodeConfig{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2alpha1().CiliumBGPNodeConfigs(), fields.OneTermEqualSelector("metadata.name", c.Node).String())
		},
		Transform: tables.BGPNodeConfigFromK8s,
	})
}

// The CiliumBGPNodeConfigs of every node several cluster configs select
// (labelled so by their agents): which cluster config holds each. Only
// those: the others change with every session counter, and every agent
// watching every node's would cost the API server a write to each agent
// for each.
func nodeOwnerKind(t statedb.RWTable[*tables.BGPNodeOwner]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumBGPNodeConfig, *tables.BGPNodeOwner]{
		Name: "bgp-node-owners", Example: &v2alpha1.CiliumBGPNodeConfig{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatchSelected(c.Herald.CiliumV2alpha1().CiliumBGPNodeConfigs(), "", tables.BGPContestedLabel)
		},
		Transform: tables.BGPNodeOwnerFromK8s,
		// Every status write of a contested node's config is an update;
		// its owner rarely changes.
		Equal: func(a, b *tables.BGPNodeOwner) bool { return *a == *b },
	})
}
