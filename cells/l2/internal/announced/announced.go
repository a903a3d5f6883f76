// Package announced records, for either election of L2 announcements, the
// Event a Service gets when a node starts answering for its IPs.
package announced

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/tables"
)

// Reason is the reason of the Event recorded on a Service when a node
// starts answering for its IPs.
const Reason = "L2Announced"

// Record records the Event on every Service of the entries: which IPs
// the node answers for, on which interfaces, under which Lease.
func Record(events record.EventRecorder, node, lease string, entries []*tables.L2AnnounceEntry) {
	where := map[string][]string{}
	for _, en := range entries {
		for _, svc := range en.Origins {
			where[svc] = append(where[svc], en.IP.String()+" on "+en.NetworkInterface)
		}
	}
	for svc, places := range where {
		ns, name, _ := strings.Cut(svc, "/")
		slices.Sort(places)
		ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: name}
		events.Eventf(ref, corev1.EventTypeNormal, Reason, "Node %s announces %s (Lease %s)", node, strings.Join(places, ", "), lease)
	}
}
