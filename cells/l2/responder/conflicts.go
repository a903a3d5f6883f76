package responder

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/bpf"
	"github.com/heraldlb/herald/tables"
)

// When an address conflict was noticed.
const (
	// whenProbing: another host answered the probe sent before this node
	// started answering; the address is not announced.
	whenProbing = "probe"
	// whenAnnouncing: another host spoke for the address while this node
	// answered for it (the eBPF program saw its packets).
	whenAnnouncing = "announcing"
)

// EventAddressConflict is the reason of the Warning Event recorded on a
// Service when another host on the LAN uses one of its IPs.
const EventAddressConflict = "L2AddressConflict"

// errAddressConflict marks an entry not programmed because another host
// uses its address.
var errAddressConflict = errors.New("address conflict")

// conflicts reports address conflicts: a log line, a Warning Event on the
// entry's Services and a metric, once per address, interface, kind and
// other MAC until the entry goes. Herald never answers back: no
// gratuitous ARP war with the other host.
type conflicts struct {
	node    string
	log     *slog.Logger
	events  record.EventRecorder
	counter *prometheus.CounterVec

	mu       sync.Mutex
	reported map[conflictKey]string // the other MAC last reported
}

type conflictKey struct {
	ip      netip.Addr
	ifindex int
	when    string
}

func newConflicts(node string, log *slog.Logger, events record.EventRecorder) *conflicts {
	return &conflicts{
		node: node, log: log, events: events, reported: map[conflictKey]string{},
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "herald_l2_address_conflicts_total",
			Help:        "Address conflicts: another host answered the probe before announcing (when=probe), or spoke for an address this node announces (when=announcing). Counted once per address and other host.",
			ConstLabels: prometheus.Labels{"node": node},
		}, []string{"when"}),
	}
}

// found reports that other uses e's address, and returns the error that
// keeps the entry pending (probe) or nil (announcing: it stays).
func (c *conflicts) found(e *tables.L2AnnounceEntry, other net.HardwareAddr, when string) error {
	k := conflictKey{e.IP, e.Ifindex, when}
	c.mu.Lock()
	again := c.reported[k] == other.String()
	c.reported[k] = other.String()
	c.mu.Unlock()
	var msg string
	switch when {
	case whenProbing:
		msg = fmt.Sprintf("%s on %s of node %s is in use by another host (%s): not announced; the node probes again until it is free", e.IP, e.NetworkInterface, c.node, other)
	default:
		msg = fmt.Sprintf("Another host (%s) speaks for %s on %s, which node %s announces: both may answer. Herald keeps answering requests but does not announce the address again; remove it from the other host", other, e.IP, e.NetworkInterface, c.node)
	}
	if !again {
		c.counter.WithLabelValues(when).Inc()
		c.log.Warn("Address conflict", "ip", e.IP, "interface", e.NetworkInterface, "otherMAC", other.String(), "when", when, "services", e.Origins)
		for _, svc := range e.Origins {
			ns, name, _ := strings.Cut(svc, "/")
			ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: name}
			c.events.Event(ref, corev1.EventTypeWarning, EventAddressConflict, msg)
		}
	}
	if when == whenProbing {
		return fmt.Errorf("%w: %s", errAddressConflict, msg)
	}
	return nil
}

// forget drops what was reported about e: if its address conflicts again
// later, that is reported again.
func (c *conflicts) forget(e *tables.L2AnnounceEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, when := range []string{whenProbing, whenAnnouncing} {
		delete(c.reported, conflictKey{e.IP, e.Ifindex, when})
	}
}

// poll reports what the eBPF program recorded in l2_responder_conflicts
// about the entries of the table, and clears the records. Records about an
// address this node no longer announces are dropped: a new owner's
// announcement may arrive while this node withdraws.
func (c *conflicts) poll(r *bpf.Responder, txn statedb.ReadTxn, table statedb.Table[*tables.L2AnnounceEntry]) error {
	seen, err := r.Conflicts()
	if err != nil || len(seen) == 0 {
		return err
	}
	for _, s := range seen {
		for e := range table.All(txn) {
			if e.IP == s.IP && e.Ifindex == s.Ifindex {
				_ = c.found(e, s.MAC, whenAnnouncing)
			}
		}
		if err := r.ForgetConflict(s.IP, s.Ifindex); err != nil {
			return err
		}
	}
	return nil
}
