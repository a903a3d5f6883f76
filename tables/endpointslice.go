package tables

import (
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// EndpointSlicesTableName is the table of EndpointSlices: which nodes run
// a ready endpoint of which Service (a Service with externalTrafficPolicy:
// Local is announced and advertised only from them), and whether a Service
// has a ready endpoint at all (one with none is withdrawn).
const EndpointSlicesTableName = "endpoint-slices"

// EndpointSlice is what L2 announcements and BGP need of an EndpointSlice.
type EndpointSlice struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Service is the Service it belongs to (kubernetes.io/service-name),
	// "" for a slice of no Service.
	Service string `json:"service,omitempty"`
	// ReadyNodes are the nodes with at least one ready endpoint in the
	// slice, sorted. An endpoint whose readiness is unknown counts as ready
	// (the API's rule); one without a node name counts for no node.
	ReadyNodes []string `json:"readyNodes,omitempty"`
	// Ready counts the ready endpoints, on a node or not. Terminating
	// endpoints are not ready (the API sets ready false for them, even
	// while they still serve, unless the Service publishes not-ready
	// addresses), so they do not count.
	Ready           int    `json:"ready"`
	ResourceVersion string `json:"resourceVersion"`
}

// Key is "namespace/name".
func (e *EndpointSlice) Key() string { return e.Namespace + "/" + e.Name }

// ServiceKey is the "namespace/name" of its Service, "" for none.
func (e *EndpointSlice) ServiceKey() string {
	if e.Service == "" {
		return ""
	}
	return e.Namespace + "/" + e.Service
}

func (e *EndpointSlice) TableHeader() []string {
	return []string{"EndpointSlice", "Service", "Ready", "ReadyNodes"}
}

func (e *EndpointSlice) TableRow() []string {
	return []string{e.Key(), dash(e.ServiceKey()), strconv.Itoa(e.Ready), dash(strings.Join(e.ReadyNodes, ","))}
}

// EndpointSliceKeyIndex is the primary index: "namespace/name".
var EndpointSliceKeyIndex = statedb.Index[*EndpointSlice, string]{
	Name:       "key",
	FromObject: func(e *EndpointSlice) index.KeySet { return index.NewKeySet(index.String(e.Key())) },
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// EndpointSliceServiceIndex finds the slices of a Service by its
// "namespace/name".
var EndpointSliceServiceIndex = statedb.Index[*EndpointSlice, string]{
	Name:       "service",
	FromObject: func(e *EndpointSlice) index.KeySet { return index.NewKeySet(index.String(e.ServiceKey())) },
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     false,
}

// NewEndpointSlicesTable creates the endpoint-slices table.
func NewEndpointSlicesTable(db *statedb.DB) (statedb.RWTable[*EndpointSlice], error) {
	return statedb.NewTable(db, EndpointSlicesTableName, EndpointSliceKeyIndex, EndpointSliceServiceIndex)
}

// EndpointSliceFromK8s converts an EndpointSlice into a row.
func EndpointSliceFromK8s(s *discoveryv1.EndpointSlice) *EndpointSlice {
	row := &EndpointSlice{
		Namespace: s.Namespace, Name: s.Name, Service: s.Labels[discoveryv1.LabelServiceName],
		ResourceVersion: s.ResourceVersion,
	}
	// An FQDN slice names hosts, not addresses: kube-proxy (and Cilium)
	// forward to none of them, so they serve nothing.
	if s.AddressType == discoveryv1.AddressTypeFQDN {
		return row
	}
	for _, ep := range s.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		row.Ready++
		if ep.NodeName == nil || *ep.NodeName == "" {
			continue
		}
		if !slices.Contains(row.ReadyNodes, *ep.NodeName) {
			row.ReadyNodes = append(row.ReadyNodes, *ep.NodeName)
		}
	}
	slices.Sort(row.ReadyNodes)
	return row
}

// HasReadyEndpoint reports whether any of a Service's slices has a ready
// endpoint.
func HasReadyEndpoint(txn statedb.ReadTxn, t statedb.Table[*EndpointSlice], serviceKey string) bool {
	for s := range t.List(txn, EndpointSliceServiceIndex.Query(serviceKey)) {
		if s.Ready > 0 {
			return true
		}
	}
	return false
}
