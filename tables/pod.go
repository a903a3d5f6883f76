package tables

import (
	"fmt"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	corev1 "k8s.io/api/core/v1"
)

// PodsTableName is the table of the Pods of this node (multi-pool IPAM
// reads their pool annotations and garbage-collects by them).
const PodsTableName = "pods"

// Pod is what pod IPAM needs of a Pod.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	NodeName  string `json:"nodeName"`
	Phase     string `json:"phase,omitempty"`
	// PoolAnnotations are the pod's ipam.cilium.io/ip-pool, ipv4-pool and
	// ipv6-pool annotations, as written.
	PoolAnnotations map[string]string `json:"poolAnnotations,omitempty"`
}

// Key is "namespace/name".
func (p *Pod) Key() string { return p.Namespace + "/" + p.Name }

func (p *Pod) TableHeader() []string { return []string{"Pod", "UID", "Phase", "Pool annotations"} }

func (p *Pod) TableRow() []string {
	return []string{p.Key(), p.UID, dash(p.Phase), dash(fmt.Sprint(poolAnnotationsString(p.PoolAnnotations)))}
}

// PodKeyIndex is the primary index: "namespace/name".
var PodKeyIndex = statedb.Index[*Pod, string]{
	Name:       "key",
	FromObject: func(p *Pod) index.KeySet { return index.NewKeySet(index.String(p.Key())) },
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewPodsTable creates the pods table.
func NewPodsTable(db *statedb.DB) (statedb.RWTable[*Pod], error) {
	return statedb.NewTable(db, PodsTableName, PodKeyIndex)
}

// PodFromK8s converts a Pod into a row.
func PodFromK8s(p *corev1.Pod) *Pod {
	return &Pod{
		Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), NodeName: p.Spec.NodeName,
		Phase: string(p.Status.Phase), PoolAnnotations: poolAnnotations(p.Annotations),
	}
}

// NamespacesTableName is the table of Namespaces, for their pool
// annotations.
const NamespacesTableName = "namespaces"

// Namespace is a Namespace's name and pool annotations.
type Namespace struct {
	Name            string            `json:"name"`
	PoolAnnotations map[string]string `json:"poolAnnotations,omitempty"`
}

func (n *Namespace) TableHeader() []string { return []string{"Name", "Pool annotations"} }

func (n *Namespace) TableRow() []string {
	return []string{n.Name, dash(poolAnnotationsString(n.PoolAnnotations))}
}

// NamespaceNameIndex is the primary index of namespaces.
var NamespaceNameIndex = statedb.Index[*Namespace, string]{
	Name:       "name",
	FromObject: func(n *Namespace) index.KeySet { return index.NewKeySet(index.String(n.Name)) },
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewNamespacesTable creates the namespaces table.
func NewNamespacesTable(db *statedb.DB) (statedb.RWTable[*Namespace], error) {
	return statedb.NewTable(db, NamespacesTableName, NamespaceNameIndex)
}

// NamespaceFromK8s converts a Namespace into a row.
func NamespaceFromK8s(n *corev1.Namespace) *Namespace {
	return &Namespace{Name: n.Name, PoolAnnotations: poolAnnotations(n.Annotations)}
}

func poolAnnotations(ann map[string]string) map[string]string {
	var out map[string]string
	for _, k := range []string{AnnotationIPPool, AnnotationIPv4Pool, AnnotationIPv6Pool} {
		if v, ok := ann[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func poolAnnotationsString(m map[string]string) string {
	s := ""
	for _, k := range []string{AnnotationIPPool, AnnotationIPv4Pool, AnnotationIPv6Pool} {
		if v, ok := m[k]; ok {
			if s != "" {
				s += ","
			}
			s += k + "=" + v
		}
	}
	return s
}
