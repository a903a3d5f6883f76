package tables

import (
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// BGPNodeConfigsTableName is the table of this node's CiliumBGPNodeConfig
// as the API server last showed it (at most one row). The agent writes the
// object; the table tells it when someone else changed or deleted it, and
// which cluster config it holds the instances of.
const BGPNodeConfigsTableName = "bgp-node-configs"

// What a CiliumBGPNodeConfig says of its cluster config. Cilium's operator
// makes the CiliumBGPClusterConfig the object's owner; Herald's agent makes
// the Node the owner (so that the object goes with the Node, whose agent
// is gone by then) and names the cluster config in an annotation.
const (
	// BGPClusterConfigAnnotation names the CiliumBGPClusterConfig whose
	// instances the node runs: the one that keeps the node when another
	// selects it too.
	BGPClusterConfigAnnotation = "bgp.herald.io/cluster-config"
	// BGPContestedLabel marks the node configs of nodes that several
	// cluster configs select. Every agent watches those (and only those:
	// the others change with every session counter) to tell each cluster
	// config whether it conflicts, and with which.
	BGPContestedLabel = "bgp.herald.io/contested"
)

// BGPNodeConfig is a CiliumBGPNodeConfig's identity, version and cluster
// config.
type BGPNodeConfig struct {
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
	// ClusterConfig is the cluster config whose instances it holds ("":
	// not said).
	ClusterConfig string `json:"clusterConfig,omitempty"`
}

func (c *BGPNodeConfig) TableHeader() []string {
	return []string{"Name", "UID", "ResourceVersion", "ClusterConfig"}
}

func (c *BGPNodeConfig) TableRow() []string {
	return []string{c.Name, c.UID, c.ResourceVersion, dash(c.ClusterConfig)}
}

// BGPNodeConfigNameIndex is the primary index of bgp-node-configs.
var BGPNodeConfigNameIndex = nameIndex(func(c *BGPNodeConfig) string { return c.Name })

// NewBGPNodeConfigsTable creates the bgp-node-configs table.
func NewBGPNodeConfigsTable(db *statedb.DB) (statedb.RWTable[*BGPNodeConfig], error) {
	return statedb.NewTable(db, BGPNodeConfigsTableName, BGPNodeConfigNameIndex)
}

// BGPNodeConfigFromK8s keeps what tells one version of the object from
// another, and its cluster config.
func BGPNodeConfigFromK8s(c *v2alpha1.CiliumBGPNodeConfig) *BGPNodeConfig {
	return &BGPNodeConfig{Name: c.Name, UID: string(c.UID), ResourceVersion: c.ResourceVersion, ClusterConfig: bgpNodeConfigOwner(c)}
}

// bgpNodeConfigOwner is the cluster config a node config holds the
// instances of: Herald's annotation, else the owner reference Cilium's
// operator writes (a cluster coming from Cilium keeps its nodes' configs
// with their owners).
func bgpNodeConfigOwner(c *v2alpha1.CiliumBGPNodeConfig) string {
	if name := c.Annotations[BGPClusterConfigAnnotation]; name != "" {
		return name
	}
	for _, o := range c.OwnerReferences {
		if o.Kind == v2alpha1.BGPClusterConfigKind {
			return o.Name
		}
	}
	return ""
}

// BGPNodeOwnersTableName is the table of the nodes several cluster configs
// select, each with the cluster config that holds it: the
// CiliumBGPNodeConfigs labelled BGPContestedLabel, of every node.
const BGPNodeOwnersTableName = "bgp-node-owners"

// BGPNodeOwner is one contested node and its cluster config.
type BGPNodeOwner struct {
	Node          string `json:"node"`
	ClusterConfig string `json:"clusterConfig"`
}

func (o *BGPNodeOwner) TableHeader() []string { return []string{"Node", "ClusterConfig"} }

func (o *BGPNodeOwner) TableRow() []string { return []string{o.Node, dash(o.ClusterConfig)} }

// BGPNodeOwnerNodeIndex is the primary index of bgp-node-owners.
var BGPNodeOwnerNodeIndex = nameIndex(func(o *BGPNodeOwner) string { return o.Node })

// NewBGPNodeOwnersTable creates the bgp-node-owners table.
func NewBGPNodeOwnersTable(db *statedb.DB) (statedb.RWTable[*BGPNodeOwner], error) {
	return statedb.NewTable(db, BGPNodeOwnersTableName, BGPNodeOwnerNodeIndex)
}

// BGPNodeOwnerFromK8s is a contested node config's row.
func BGPNodeOwnerFromK8s(c *v2alpha1.CiliumBGPNodeConfig) *BGPNodeOwner {
	return &BGPNodeOwner{Node: c.Name, ClusterConfig: bgpNodeConfigOwner(c)}
}
