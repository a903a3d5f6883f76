package tables

import "strconv"

// Special selector keys: they match a Service's namespace and name instead
// of a label, in pool and policy service selectors alike.
const (
	LabelServiceNamespace = "io.kubernetes.service.namespace"
	LabelServiceName      = "io.kubernetes.service.name"
)

func itoa(i int) string { return strconv.Itoa(i) }
