package tables

import "strconv"

// Special selector keys: they match a Service's namespace and name instead
// of a label, in pool and policy service selectors alike.
const (
	LabelServiceNamespace = "io.kubernetes.service.namespace"
	LabelServiceName      = "io.kubernetes.service.name"
)

// Special selector keys of a CiliumPodIPPool, which a BGP advertisement of
// type CiliumPodIPPool may select it by (Cilium's podIPPoolLabelSet). The
// pool is cluster-scoped: its namespace is always "".
const (
	LabelPodIPPoolName      = "io.cilium.podippool.name"
	LabelPodIPPoolNamespace = "io.cilium.podippool.namespace"
)

func itoa(i int) string { return strconv.Itoa(i) }
