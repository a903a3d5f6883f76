package candidates

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Agent      agentconfig.Config
	L2         l2config.Config
	Log        *slog.Logger
	DB         *statedb.DB
	Jobs       job.Group
	Services   statedb.Table[*tables.Service]
	Policies   statedb.Table[*tables.L2Policy]
	Nodes      statedb.Table[*tables.Node]
	Slices     statedb.Table[*tables.EndpointSlice]
	Devices    statedb.Table[*tables.Device]
	Members    statedb.Table[*tables.L2Member]
	Candidates statedb.RWTable[*tables.L2Candidate]
	Events     record.EventRecorder
}

func registerDerivation(p params) {
	if !p.L2.EnableL2Announcements {
		return
	}
	wtxn := p.DB.WriteTxn(p.Candidates)
	initDone := p.Candidates.RegisterInitializer(wtxn, "l2-candidates")
	wtxn.Commit()
	p.Jobs.Add(job.OneShot("derive", func(ctx context.Context, health cell.Health) error {
		return run(ctx, p, initDone, health)
	}))
}

// run re-derives the table whenever one of its inputs changes. The
// derivation is global (groups join Services across namespaces; a node's
// labels change the candidates of every group), so it starts from the
// inputs each time; only rows that changed are written.
func run(ctx context.Context, p params, initDone func(statedb.WriteTxn), health cell.Health) error {
	if err := tables.WaitInitialized(ctx, p.DB, p.Services, p.Policies, p.Nodes, p.Devices, p.Slices); err != nil {
		return nil
	}
	reported := map[string]reportedAs{} // stranded Services this node reported
	initialized := false
	tablesync.Loop(ctx, p.DB, func(txn statedb.ReadTxn, w *tablesync.Watches) {
		svcs := tablesync.All(w, txn, p.Services)
		pols := tablesync.All(w, txn, p.Policies)
		nodes := tablesync.All(w, txn, p.Nodes)
		devs := tablesync.All(w, txn, p.Devices)
		members := tablesync.All(w, txn, p.Members)
		tablesync.All(w, txn, p.Slices) // watched; read per Service below
		readyNodes := func(svc string) []string {
			var out []string
			for s := range p.Slices.List(txn, tables.EndpointSliceServiceIndex.Query(svc)) {
				out = append(out, s.ReadyNodes...)
			}
			return out
		}
		peerDevices := map[string][]string{}
		for m := range members {
			if !m.Self && m.Devices != nil {
				peerDevices[m.Node] = m.Devices
			}
		}
		in := inputs{self: p.Agent.Node(), services: statedb.Collect(svcs), policies: statedb.Collect(pols), nodes: statedb.Collect(nodes),
			devices: statedb.Collect(devs), peerDevices: peerDevices, readyNodes: readyNodes,
			served:       func(svc string) bool { return tables.HasReadyEndpoint(txn, p.Slices, svc) },
			keepUnserved: p.Agent.EnableNoServiceEndpointsRoutable}
		rows := derive(in)

		wtxn := p.DB.WriteTxn(p.Candidates)
		if !initialized {
			initDone(wtxn)
			initialized = true
		}
		changed := tablesync.Sync(wtxn, p.Candidates, rows, func(c *tables.L2Candidate) string { return c.Group }, same)
		wtxn.Commit()
		reportStranded(p, strandedServices(in), in.services, rows, reported)
		health.OK(fmt.Sprintf("%d groups, %d rows changed", len(rows), changed))
	})
	return nil
}

// same compares two rows by their JSON, which holds every field.
func same(a, b *tables.L2Candidate) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// EventNotAnnounced is the reason of the Warning Event recorded on a Service
// no node may announce: it has no ready endpoint, or (externalTrafficPolicy:
// Local) none on a node the policies select.
const EventNotAnnounced = "L2NotAnnounced"

// reportedAs is what the Event of a stranded Service said: why, and for
// which IPs.
type reportedAs struct {
	cause strandCause
	ips   string
}

// reportStranded records an Event on each Service that became stranded (or
// stranded for another cause) and that this node reports (the first node
// the policies select for it), and forgets the ones that are no longer
// stranded, so that the Event comes again if it strands again: one Event
// per transition, not per derivation.
func reportStranded(p params, now []stranded, services []*tables.Service, rows []*tables.L2Candidate, reported map[string]reportedAs) {
	node := p.Agent.Node()
	still := map[string]bool{}
	for _, st := range now {
		if st.reporter != node {
			continue
		}
		still[st.service] = true
		var ips []netip.Addr
		for _, svc := range services {
			if svc.Key() == st.service {
				ips = slices.Concat(svc.IngressIPs, svc.ExternalIPs)
			}
		}
		// Its IPs are part of what was said: new ones while it stays
		// stranded get an Event of their own, as in BGP.
		as := reportedAs{st.cause, fmt.Sprint(ips)}
		if reported[st.service] == as {
			continue
		}
		reported[st.service] = as
		ns, name, _ := strings.Cut(st.service, "/")
		ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: name}
		subject, shared := notAnnouncedSubject(st.service, ips, rows)
		switch st.cause {
		case noReadyEndpoint:
			p.Events.Eventf(ref, corev1.EventTypeWarning, EventNotAnnounced,
				"%s: the Service has no ready endpoint (enable-no-service-endpoints-routable is false); announced again once one is ready%s",
				subject, shared)
			p.Log.Warn("Service not announced: no ready endpoint", "service", st.service)
		case noLocalEndpoint:
			p.Events.Eventf(ref, corev1.EventTypeWarning, EventNotAnnounced,
				"%s: externalTrafficPolicy is Local and none of the %d nodes the L2 announcement policies select for it runs a ready endpoint%s",
				subject, st.selected, shared)
			p.Log.Warn("Service not announced: no ready local endpoint on any selected node", "service", st.service, "selectedNodes", st.selected)
		}
	}
	for svc := range reported {
		if !still[svc] {
			delete(reported, svc)
		}
	}
}

// notAnnouncedSubject starts the Event of a stranded Service: "No node
// announces IPs". When other Services share some of its IPs and are
// announced, those IPs are still answered for, and shared says so (". IP
// stays announced for ns/other, which shares it"), lest the Event read as
// if the address were gone from the LAN.
func notAnnouncedSubject(service string, ips []netip.Addr, rows []*tables.L2Candidate) (subject, shared string) {
	announcedFor := map[netip.Addr][]string{}
	for _, r := range rows {
		if len(r.Nodes) == 0 {
			continue
		}
		for _, ip := range r.IPs {
			for _, s := range r.Services {
				if s != service && !slices.Contains(announcedFor[ip], s) {
					announcedFor[ip] = append(announcedFor[ip], s)
				}
			}
		}
	}
	strs := make([]string, len(ips))
	var notes []string
	for i, ip := range ips {
		strs[i] = ip.String()
		if others := announcedFor[ip]; len(others) > 0 {
			slices.Sort(others)
			verb := "share"
			if len(others) == 1 {
				verb = "shares"
			}
			notes = append(notes, fmt.Sprintf("%s stays announced for %s, which %s it", ip, strings.Join(others, ", "), verb))
		}
	}
	subject = "No node announces " + strings.Join(strs, ", ")
	if len(notes) == 0 {
		return subject, ""
	}
	return subject + " for this Service", ". " + strings.Join(notes, "; ")
}
