package tables

import (
	"reflect"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
)

// BGPNodeStatusTableName is the table of what this node's
// CiliumBGPNodeConfig should say.
const BGPNodeStatusTableName = "bgp-node-status"

// BGPNodeStatus is what this node's CiliumBGPNodeConfig is made of (one
// row, the node's): its instances, its sessions, its owner; the bgp-status
// cell reconciles it into the object (created with the first instance,
// deleted with the last).
type BGPNodeStatus struct {
	Node    string `json:"node"`
	NodeUID string `json:"nodeUID,omitempty"` // the owner; "" until the Node is seen
	// ClusterConfig is the cluster config the instances come from, named
	// in the object's annotation BGPClusterConfigAnnotation; Contested
	// says that several select the node, and labels the object
	// BGPContestedLabel for the other agents to see which holds it.
	ClusterConfig string          `json:"clusterConfig,omitempty"`
	Contested     bool            `json:"contested,omitempty"`
	Instances     []*BGPInstance  `json:"instances"`
	Peers         []*BGPPeerState `json:"peers"`
	// Seen is the object's resourceVersion as last reflected ("" while
	// there is none): a change by someone else makes the row differ, and
	// be reconciled again.
	Seen string `json:"seen,omitempty"`

	Status reconciler.Status `json:"status"`
}

// Same reports whether b asks for the same as s (the reconciliation
// status aside).
func (s *BGPNodeStatus) Same(b *BGPNodeStatus) bool {
	x, y := *s, *b
	x.Status, y.Status = reconciler.Status{}, reconciler.Status{}
	return reflect.DeepEqual(x, y)
}

func (s *BGPNodeStatus) Clone() *BGPNodeStatus { c := *s; return &c }

func (s *BGPNodeStatus) GetStatus() reconciler.Status { return s.Status }

func (s *BGPNodeStatus) SetStatus(st reconciler.Status) *BGPNodeStatus {
	s.Status = st
	return s
}

func (s *BGPNodeStatus) TableHeader() []string {
	return []string{"Node", "Instances", "Peers", "Seen", "Status"}
}

func (s *BGPNodeStatus) TableRow() []string {
	return []string{s.Node, itoa(len(s.Instances)), itoa(len(s.Peers)), dash(s.Seen), s.Status.String()}
}

// BGPNodeStatusNodeIndex is the primary index: the node.
var BGPNodeStatusNodeIndex = nameIndex(func(s *BGPNodeStatus) string { return s.Node })

// NewBGPNodeStatusTable creates the bgp-node-status table.
func NewBGPNodeStatusTable(db *statedb.DB) (statedb.RWTable[*BGPNodeStatus], error) {
	return statedb.NewTable(db, BGPNodeStatusTableName, BGPNodeStatusNodeIndex)
}
