package ipamcheck

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// IPRelease is what `release IP` sends to the node's agent.
type IPRelease struct {
	// Del is the request, as the CNI plugin sends it when the runtime
	// deletes the attachment.
	Del ipamv1.DelRequest
	// IPs are every address the DEL releases: all of the attachment's.
	IPs []netip.Addr
	Pod string // namespace/name
	// Warning is set when --force overrode a refusal: what the user was
	// told.
	Warning string
}

// PlanIPRelease decides what `release IP` sends to this node's agent: the
// DEL of the attachment holding ip. It refuses, unless force, when the Pod
// of that attachment still exists on this node: releasing the address of a
// running pod lets another pod get it.
func PlanIPRelease(in Input, ip netip.Addr, force bool) (*IPRelease, error) {
	ip = ip.Unmap()
	var row *tables.PodIPAllocation
	for _, a := range in.Allocations {
		if a.IP == ip {
			row = a
			break
		}
	}
	if row == nil {
		return nil, fmt.Errorf("%s is not allocated on node %s: the agent's pod-ip-allocations table has no row for it (nothing to release)", ip, in.Node)
	}
	plan := &IPRelease{
		Del: ipamv1.DelRequest{
			Attachment: ipamv1.Attachment{ContainerID: row.ContainerID, IfName: row.IfName},
			Pod:        ipamv1.PodRef{Namespace: row.PodNS, Name: row.PodName, UID: row.PodUID},
		},
		Pod: row.PodNS + "/" + row.PodName,
	}
	for _, a := range in.Allocations {
		if a.ContainerID == row.ContainerID && a.IfName == row.IfName {
			plan.IPs = append(plan.IPs, a.IP)
		}
	}
	slices.SortFunc(plan.IPs, netip.Addr.Compare)
	if gone, _ := newChecker(in).podGone(row); !gone {
		uid := ""
		if row.PodUID != "" {
			uid = " (uid " + row.PodUID + ")"
		}
		msg := fmt.Sprintf("pod %s%s still exists on node %s and holds %s through container %s, interface %s: "+
			"releasing it lets another pod get an address this one still uses. Delete the pod (its DEL releases the address)",
			plan.Pod, uid, in.Node, joinAddrs(plan.IPs), row.ContainerID, row.IfName)
		if !force {
			return nil, fmt.Errorf("refusing to release %s: %s, or use --force", ip, msg)
		}
		plan.Warning = msg
	}
	return plan, nil
}

// CIDRRelease is what `release --cidr` writes to a CiliumNode.
type CIDRRelease struct {
	// Allocated is the CiliumNode's new spec.ipam.pools.allocated: as it
	// was, without the CIDR (and without pools left empty), entries that do
	// not parse kept as they are.
	Allocated []v2.IPAMPoolAllocation
	Removed   string // the entry as it was written
	Pool      string
	// InUse are the addresses of the CIDR in use on the node, when --force
	// overrode the refusal.
	InUse []netip.Addr
	// Warning is set when --force overrode a refusal.
	Warning string
}

// PlanCIDRRelease decides what `release --cidr X --node N` writes to
// CiliumNode N: spec.ipam.pools.allocated without X. cidr is matched
// against the entries as CIDRs (masked, as the agents read them) or, for an
// entry that is not a CIDR, as written. local are the allocations of N's
// agent when the command runs on N (nil otherwise). It refuses, unless
// force, when N uses an address of X, by its status.ipam.used or its
// agent's tables: its pods would keep addresses the allocator may give to
// another node.
func PlanCIDRRelease(cn *v2.CiliumNode, cidr string, local []*tables.PodIPAllocation, force bool) (*CIDRRelease, error) {
	want, perr := netip.ParsePrefix(cidr)
	want = want.Masked()
	matches := func(c v2.IPAMPodCIDR) bool {
		if string(c) == cidr {
			return true
		}
		p, err := netip.ParsePrefix(string(c))
		return perr == nil && err == nil && p.Masked() == want
	}
	plan := &CIDRRelease{}
	var listed []string
	for _, a := range cn.Spec.IPAM.Pools.Allocated {
		keep := v2.IPAMPoolAllocation{Pool: a.Pool}
		for _, c := range a.CIDRs {
			listed = append(listed, fmt.Sprintf("%s (pool %s)", c, a.Pool))
			if plan.Removed == "" && matches(c) {
				plan.Removed, plan.Pool = string(c), a.Pool
				continue
			}
			keep.CIDRs = append(keep.CIDRs, c)
		}
		if len(keep.CIDRs) > 0 {
			plan.Allocated = append(plan.Allocated, keep)
		}
	}
	if plan.Removed == "" {
		if perr != nil {
			return nil, fmt.Errorf("%q is not a CIDR (%v), and CiliumNode %s lists no entry written that way; it lists: %s", cidr, perr, cn.Name, orNone(listed))
		}
		return nil, fmt.Errorf("CiliumNode %s does not list %s in spec.ipam.pools.allocated (nothing to release); it lists: %s", cn.Name, want, orNone(listed))
	}
	if plan.Allocated == nil {
		plan.Allocated = []v2.IPAMPoolAllocation{} // written as an empty list, not left out
	}
	if p, err := netip.ParsePrefix(plan.Removed); err == nil {
		p = p.Masked()
		inUse := map[netip.Addr]bool{}
		for ip := range cn.Status.IPAM.Used {
			if a, err := netip.ParseAddr(ip); err == nil && p.Contains(a.Unmap()) {
				inUse[a.Unmap()] = true
			}
		}
		for _, a := range local {
			if p.Contains(a.IP) {
				inUse[a.IP] = true
			}
		}
		for a := range inUse {
			plan.InUse = append(plan.InUse, a)
		}
		slices.SortFunc(plan.InUse, netip.Addr.Compare)
		if len(plan.InUse) > 0 {
			msg := fmt.Sprintf("node %s uses %s of %s (%s): its pods would keep addresses the allocator may then give to another node. "+
				"Delete those pods first", cn.Name, addresses(len(plan.InUse)), p, joinAddrs(plan.InUse))
			if !force {
				return nil, fmt.Errorf("refusing to remove %s from CiliumNode %s: %s, or use --force", p, cn.Name, msg)
			}
			plan.Warning = msg
		}
	}
	return plan, nil
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	if len(s) > 8 {
		s = append(s[:8], "...")
	}
	return strings.Join(s, ", ")
}

// addresses is "1 address", "2 addresses".
func addresses(n int) string {
	if n == 1 {
		return "1 address"
	}
	return fmt.Sprintf("%d addresses", n)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}
