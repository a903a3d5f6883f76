package desired

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventNotAdvertised is the reason of the Warning Event recorded on a
// Service that BGP withdraws because it has no ready endpoint anywhere.
const EventNotAdvertised = "BGPNotAdvertised"

// reports tells whether self records the Events of what its instances
// withhold: it is the first by name of the nodes its cluster config owns
// (owners: the cluster config of each node, tables.BGPOwners), so that a
// Service gets one Event per cluster config and not one per node.
func reports(self string, owners map[string]string) bool {
	mine := owners[self]
	if mine == "" {
		return false
	}
	for n, o := range owners {
		if o == mine && n < self {
			return false
		}
	}
	return true
}

// withheldReporter records one Event per Service when it starts being
// withheld (or its addresses change while withheld) and forgets it once it
// is advertised again, so that the Event comes again if it is withheld
// again: one Event per transition, not per derivation.
type withheldReporter struct {
	events   record.EventRecorder
	log      *slog.Logger
	reported map[string]string // Service -> the addresses reported
}

func (r *withheldReporter) report(clusterConfig string, withheld map[string][]netip.Addr) {
	for svc, addrs := range withheld {
		var ips []string
		for _, a := range addrs {
			ips = append(ips, a.String())
		}
		what := strings.Join(ips, ", ")
		if r.reported[svc] == what {
			continue
		}
		r.reported[svc] = what
		ns, name, _ := strings.Cut(svc, "/")
		ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: name}
		r.events.Event(ref, corev1.EventTypeWarning, EventNotAdvertised, fmt.Sprintf(
			"BGP withdraws %s (nodes of CiliumBGPClusterConfig %s): the Service has no ready endpoint (enable-no-service-endpoints-routable is false); advertised again once one is ready",
			what, clusterConfig))
		r.log.Warn("Service not advertised: no ready endpoint", "service", svc, "clusterConfig", clusterConfig)
	}
	for svc := range r.reported {
		if _, ok := withheld[svc]; !ok {
			delete(r.reported, svc)
		}
	}
}
