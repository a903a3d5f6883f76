package tables

import (
	"sort"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	corev1 "k8s.io/api/core/v1"
)

// NodesTableName is the table of Nodes the agent knows: its own.
const NodesTableName = "nodes"

// Node is a Kubernetes Node's name and labels.
type Node struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

func (n *Node) TableHeader() []string { return []string{"Name", "Labels"} }

func (n *Node) TableRow() []string {
	ls := make([]string, 0, len(n.Labels))
	for k, v := range n.Labels {
		ls = append(ls, k+"="+v)
	}
	sort.Strings(ls)
	return []string{n.Name, dash(strings.Join(ls, ","))}
}

// NodeNameIndex is the primary index of nodes.
var NodeNameIndex = statedb.Index[*Node, string]{
	Name: "name",
	FromObject: func(n *Node) index.KeySet {
		return index.NewKeySet(index.String(n.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewNodesTable creates the nodes table.
func NewNodesTable(db *statedb.DB) (statedb.RWTable[*Node], error) {
	return statedb.NewTable(db, NodesTableName, NodeNameIndex)
}

// NodeFromK8s converts a Node into a row.
func NodeFromK8s(n *corev1.Node) *Node {
	return &Node{Name: n.Name, Labels: maps(n.Labels)}
}
