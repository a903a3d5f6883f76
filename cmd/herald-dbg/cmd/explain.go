package cmd

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/cells/lbipam/allocator"
	"github.com/heraldlb/herald/tables"
)

func explainCmd() *cobra.Command {
	explain := &cobra.Command{Use: "explain", Short: "Explain the agent's decisions"}
	explain.AddCommand(&cobra.Command{
		Use:   "service NAMESPACE/NAME",
		Short: "Why a Service has, or lacks, each of its IPs, and where it is announced and advertised",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			if !strings.Contains(key, "/") {
				return fmt.Errorf("name the Service as NAMESPACE/NAME, e.g. default/%s", key)
			}
			snap, err := fetchSnapshot(cmd.Context())
			if err != nil {
				return err
			}
			// The decisions are recomputed from the agent's tables exactly as a
			// new LB IPAM leader would take them.
			e := allocator.Simulate(snap.families(), snap.responsibility(), snap.pools, snap.services)
			fmt.Printf("Service %s\n", key)
			for _, line := range e.Explain(key) {
				fmt.Println("  " + line)
			}
			if err := explainAnnouncement(cmd, key, snap.config); err != nil {
				return err
			}
			return explainBGP(cmd, key, snap.config)
		},
	})
	return explain
}

// explainBGP reports which of the Service's addresses this node advertises
// over BGP, to which peers and why; or, when none, what to check.
func explainBGP(cmd *cobra.Command, key string, cfg map[string]string) error {
	if cfg["enable-bgp-control-plane"] != "true" {
		fmt.Println("  BGP: the BGP control plane is off on this agent.")
		return nil
	}
	routes, err := fetchTable[*tables.BGPRoute](cmd.Context(), tables.BGPRoutesTableName)
	if err != nil {
		return err
	}
	peers, err := fetchTable[*tables.BGPPeerState](cmd.Context(), tables.BGPPeersTableName)
	if err != nil {
		return err
	}
	state := map[string]string{}
	noIPv6 := map[string]string{} // peers that get no IPv6 routes, and why
	for _, p := range peers {
		state[p.Key()] = p.State
		noIPv6[p.Key()] = p.NextHopError
	}
	found := false
	for _, r := range routes {
		for _, reason := range r.Reasons {
			if !strings.HasPrefix(reason, "Service "+key+" ") {
				continue
			}
			found = true
			attrs := ""
			if a := r.Attributes.String(); a != "" {
				attrs = " with " + a
			}
			session := state[r.Instance+"/"+r.Peer]
			if session == "" {
				session = "not running"
			}
			fmt.Printf("  BGP: %s to peer %s (%s, session %s)%s: %s\n", r.Prefix, r.Peer, r.PeerAddress, session, attrs, reason)
			if why := noIPv6[r.Instance+"/"+r.Peer]; why != "" && r.Prefix.Addr().Is6() {
				fmt.Printf("    NOT sent: %s\n", why)
			}
		}
	}
	if !found {
		fmt.Println("  BGP: this node advertises none of its addresses. A peer family's advertisements selector must select a")
		fmt.Println("    CiliumBGPAdvertisement whose Service selector matches the Service's labels; LoadBalancer IPs need no")
		fmt.Println("    loadBalancerClass or io.cilium/bgp-control-plane; the Service needs a ready endpoint somewhere (unless")
		fmt.Println("    enable-no-service-endpoints-routable), and with externalTrafficPolicy: Local on this node. See herald-dbg")
		fmt.Println("    statedb bgp-instances, bgp-advertisements and endpoint-slices.")
	}
	return nil
}

// explainAnnouncement reports what this node announces for the Service.
func explainAnnouncement(cmd *cobra.Command, key string, cfg map[string]string) error {
	if cfg["enable-l2-announcements"] != "true" {
		fmt.Println("  Announcement: L2 announcements are off on this agent.")
		return nil
	}
	members := cfg["l2-announcements-election"] != "lease"
	grouped := false
	if members {
		var err error
		if grouped, err = explainOwnership(cmd, key); err != nil {
			return err
		}
	}
	entries, err := fetchTable[*tables.L2AnnounceEntry](cmd.Context(), tables.L2AnnounceTableName)
	if err != nil {
		return err
	}
	lines, found := announcementLines(agentNode(cfg), key, entries)
	for _, l := range lines {
		fmt.Println(l)
	}
	if askLeaseHolder(members, grouped, found) {
		ns, lease := cfg["k8s-namespace"], leaseOf(key)
		holder, err := leaseHolder(cmd.Context(), ns, lease)
		fmt.Print(holderLines(agentNode(cfg), ns, lease, holder, err))
	}
	return nil
}

// holderLines name the node that answers by the holder of the Service's
// Lease. When the Lease cannot be read (the API server is down, say) they
// say why, rather than send the user to a kubectl that fails the same way;
// the holder may be this very node, silent until it renews the Lease.
func holderLines(node, ns, lease, holder string, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("  Announcement: not by this node (%s) now. Lease %s/%s names the node that does, and cannot be read: %v\n"+
			"    Once it can: kubectl -n %s get lease %s\n", node, ns, lease, err, ns, lease)
	case holder == "":
		return fmt.Sprintf("  Announcement: nobody holds Lease %s/%s: no node is selected, or the Service shares its IP with another whose Lease decides.\n", ns, lease)
	default:
		return fmt.Sprintf("  Announcement: by node %s (holder of Lease %s/%s); run herald-dbg there for the interface.\n", holder, ns, lease)
	}
}

// askLeaseHolder reports whether explain names the node that answers by
// the holder of the Service's Lease: when this node does not answer, and
// the Service has a Lease to look at. Under the members election a
// Service in no group has none (explainOwnership said why): the Lease
// election's "nobody holds" would only mislead.
func askLeaseHolder(members, grouped, answeredHere bool) bool {
	return !answeredHere && (grouped || !members)
}

// announcementLines say what this node's l2-announce rows of the Service
// mean, and whether it answers for one of its IPs.
func announcementLines(node, key string, entries []*tables.L2AnnounceEntry) (lines []string, answering bool) {
	for _, e := range entries {
		if !slices.Contains(e.Origins, key) {
			continue
		}
		switch {
		case !e.Withdrawn:
			// IPv6 addresses are resolved by neighbor solicitations, not ARP.
			asks := "ARP"
			if e.IP.Is6() {
				asks = "neighbor solicitations"
			}
			lines = append(lines, fmt.Sprintf("  Announcement: this node (%s) answers %s for %s on %s (%s).", node, asks, e.IP, e.NetworkInterface, e.MAC))
			answering = true
		case e.Out():
			lines = append(lines, fmt.Sprintf("  Announcement: this node (%s) no longer answers for %s on %s: out of its responder, it gives the IP up.", node, e.IP, e.NetworkInterface))
		default:
			// Its ownership is kept until the responder confirms.
			state := strings.ToLower(e.Status.Kind.String())
			if e.Status.Error != nil {
				state += ": " + *e.Status.Error
			}
			lines = append(lines, fmt.Sprintf("  Announcement: this node (%s) is taking %s on %s out of its responder (%s), and keeps the IP until it is out.", node, e.IP, e.NetworkInterface, state))
		}
	}
	return lines, answering
}

// explainOwnership says, for the members election, which group the Service
// is in, which nodes may announce it, which one placement chose, what its
// Lease records and why this node answers or not; grouped is false when
// the Service is in no group.
func explainOwnership(cmd *cobra.Command, key string) (grouped bool, err error) {
	cands, err := fetchTable[*tables.L2Candidate](cmd.Context(), tables.L2CandidatesTableName)
	if err != nil {
		return false, err
	}
	owners, err := fetchTable[*tables.L2Owner](cmd.Context(), tables.L2OwnersTableName)
	if err != nil {
		return false, err
	}
	for _, c := range cands {
		if !slices.Contains(c.Services, key) {
			continue
		}
		fmt.Printf("  Group: %s (Services %s; IPs %s)\n", c.Group, strings.Join(c.Services, ", "), joinAddrs(c.IPs))
		if len(c.Nodes) == 0 {
			fmt.Println("  Candidates: none: no node the policies select may announce it: the Services have no ready endpoint")
			fmt.Println("    (unless enable-no-service-endpoints-routable), or, for externalTrafficPolicy: Local, none runs on such a node.")
		} else {
			fmt.Printf("  Candidates: %s\n", strings.Join(c.Nodes, ", "))
		}
		for _, o := range owners {
			if o.Group == c.Group {
				fmt.Printf("  Owner by placement among the live candidates: %s; the Lease names %s.\n", dashIfEmpty(o.Owner), dashIfEmpty(o.Holder))
				fmt.Printf("  On this node: %s.\n", o.Why)
			}
		}
		return true, nil
	}
	fmt.Println("  Group: none: no L2 announcement policy selects the Service together with an IP of it.")
	return false, nil
}

func joinAddrs(ips []netip.Addr) string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return strings.Join(out, ", ")
}

// leaseHolder reads a Lease with the Pod's service account or --kubeconfig.
func leaseHolder(ctx context.Context, ns, name string) (string, error) {
	kube, _, err := kubeClients()
	if err != nil {
		return "", err
	}
	l, err := kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

func leaseOf(key string) string {
	return "cilium-l2announce-" + strings.Replace(key, "/", "-", 1)
}
