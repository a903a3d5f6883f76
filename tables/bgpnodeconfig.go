package tables

import (
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// BGPNodeConfigsTableName is the table of this node's CiliumBGPNodeConfig
// as the API server last showed it (at most one row). The agent writes the
// object; the table tells it when someone else changed or deleted it.
const BGPNodeConfigsTableName = "bgp-node-configs"

// BGPNodeConfig is a CiliumBGPNodeConfig's identity and version.
type BGPNodeConfig struct {
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
}

func (c *BGPNodeConfig) TableHeader() []string { return []string{"Name", "UID", "ResourceVersion"} }

func (c *BGPNodeConfig) TableRow() []string { return []string{c.Name, c.UID, c.ResourceVersion} }

// BGPNodeConfigNameIndex is the primary index of bgp-node-configs.
var BGPNodeConfigNameIndex = nameIndex(func(c *BGPNodeConfig) string { return c.Name })

// NewBGPNodeConfigsTable creates the bgp-node-configs table.
func NewBGPNodeConfigsTable(db *statedb.DB) (statedb.RWTable[*BGPNodeConfig], error) {
	return statedb.NewTable(db, BGPNodeConfigsTableName, BGPNodeConfigNameIndex)
}

// BGPNodeConfigFromK8s keeps what tells one version of the object from
// another.
func BGPNodeConfigFromK8s(c *v2alpha1.CiliumBGPNodeConfig) *BGPNodeConfig {
	return &BGPNodeConfig{Name: c.Name, UID: string(c.UID), ResourceVersion: c.ResourceVersion}
}
