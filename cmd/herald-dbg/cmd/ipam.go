package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cmd/herald-dbg/ipamcheck"
	"github.com/heraldlb/herald/tables"
)

// dbgFieldManager is who herald-dbg's writes to CiliumNodes are by.
const dbgFieldManager = "herald-dbg"

func ipamCmd() *cobra.Command {
	ipam := &cobra.Command{
		Use:   "ipam",
		Short: "Multi-pool pod IPAM: find leaked addresses and CIDRs held twice or in the wrong place, and release them",
	}
	ipam.AddCommand(ipamCheckCmd(), ipamReleaseCmd())
	return ipam
}

func ipamCheckCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check this node's pod addresses and every node's pod CIDRs; exits non-zero when it finds an error",
		Long: `Compares what this node's agent holds (pod-ip-allocations, node-pod-cidrs) with the API server's
Pods, CiliumNodes and CiliumPodIPPools, and reports:

  errors (exit status 1):
    leaked-address              an address whose Pod is gone (the agent's garbage collection also
                                releases it, a minute or two after the Pod went)
    duplicate-address           one address held by two attachments, here or on two nodes
    address-outside-node-cidrs  an address of a live Pod outside every CIDR the node holds
    cidr-on-two-nodes           one CIDR, or overlapping ones, in two CiliumNodes
    cidr-not-in-ciliumnode      a CIDR in use here that this node's CiliumNode no longer lists
    cidr-outside-pool           a CIDR of this node outside its pool, and unused
    bad-cidr                    a CiliumNode entry that is not a CIDR
    no-ciliumnode               this node has no CiliumNode
  notes (exit status 0):
    cidr-outside-pool           a CIDR of this node outside its pool (it shrank) that pods still use
    cidr-not-in-ciliumnode      a CIDR the agent still has, unused, that its CiliumNode dropped
    cidr-not-on-agent           a CIDR the CiliumNode lists that the agent has not picked up yet

Each finding says what is wrong, what "herald-dbg ipam release" would do about it and, when it is
safe to run as is, the command.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: use table or json", output)
			}
			v, err := readIPAMView(cmd.Context(), true)
			if err != nil {
				return err
			}
			r := ipamcheck.Check(v.in)
			if output == "json" {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				printReport(os.Stdout, r)
			}
			if r.Errors > 0 {
				return fmt.Errorf("%s on node %s", plural(r.Errors, "error", "errors"), r.Node)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table or json")
	return cmd
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func printReport(w io.Writer, r ipamcheck.Report) {
	fmt.Fprintf(w, "Node %s: %s in %s on this node; %s, %s, %s.\n",
		r.Node, plural(r.Addresses, "address", "addresses"), plural(r.NodeCIDRs, "CIDR", "CIDRs"),
		plural(r.CiliumNodes, "CiliumNode", "CiliumNodes"), plural(r.Pools, "pool", "pools"), plural(r.Pods, "Pod", "Pods"))
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "No problems found.")
		return
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "\n%s %s: %s\n", strings.ToUpper(string(f.Severity)), f.Kind, f.Objects())
		fmt.Fprintf(w, "  problem: %s\n", f.Problem)
		fmt.Fprintf(w, "  fix:     %s\n", f.Action)
		if f.Command != "" {
			fmt.Fprintf(w, "  run:     %s\n", f.Command)
		}
	}
	fmt.Fprintf(w, "\n%s, %s.\n", plural(r.Errors, "error", "errors"), plural(r.Notes, "note", "notes"))
}

func ipamReleaseCmd() *cobra.Command {
	var (
		cidr, node, ipamSocket string
		force                  bool
	)
	cmd := &cobra.Command{
		Use:   "release IP | release --cidr CIDR --node NODE",
		Short: "Release what ipam check reports: a leaked address on this node, or a CIDR from one CiliumNode",
		Long: `release IP
  Sends this node's agent, on its IPAM socket, the CNI DEL of the attachment that holds IP, as the
  herald-ipam plugin does when the container runtime deletes it: the agent releases every address
  of that attachment through its journal. Refused while the attachment's Pod still exists on this
  node, unless --force.

release --cidr CIDR --node NODE
  Removes CIDR from CiliumNode NODE's spec.ipam.pools.allocated, conditional on the version read.
  Refused while NODE uses an address of it (status.ipam.used of its CiliumNode, and this agent's
  tables when NODE is this node), unless --force. CIDR may also be an entry that is not a CIDR, as
  written.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case cidr != "" && len(args) == 0:
				if node == "" {
					return fmt.Errorf("--cidr needs --node: the CiliumNode to remove it from")
				}
				return releaseCIDR(cmd.Context(), cidr, node, force)
			case cidr == "" && len(args) == 1:
				if node != "" {
					return fmt.Errorf("--node goes with --cidr: an address is released on the node herald-dbg runs on")
				}
				ip, err := netip.ParseAddr(args[0])
				if err != nil {
					return fmt.Errorf("%q is not an IP address: %w", args[0], err)
				}
				return releaseIP(cmd.Context(), ip, ipamSocket, force)
			default:
				return fmt.Errorf("give an address (release IP) or a CIDR and its node (release --cidr CIDR --node NODE)")
			}
		},
	}
	cmd.Flags().StringVar(&cidr, "cidr", "", "The CIDR to remove from a CiliumNode")
	cmd.Flags().StringVar(&node, "node", "", "The CiliumNode to remove --cidr from")
	cmd.Flags().BoolVar(&force, "force", false, "Release even though a Pod still exists (IP) or the node uses addresses of the CIDR")
	cmd.Flags().StringVar(&ipamSocket, "ipam-socket", "", "The agent's IPAM socket; default: the agent's ipam-socket setting, else "+ipamv1.DefaultSocket)
	return cmd
}

// ipamView is what check and release read.
type ipamView struct {
	cfg    map[string]string
	in     ipamcheck.Input
	kube   kubernetes.Interface
	herald versioned.Interface
}

// readIPAMView reads the agent's tables, then the API server: a Pod
// created in between has no address to look at yet, while a Pod deleted
// in between is reported as the leak it is until its DEL comes. cluster
// adds the CiliumNodes and the pools.
func readIPAMView(ctx context.Context, cluster bool) (*ipamView, error) {
	cfg, err := fetchConfig(ctx)
	if err != nil {
		return nil, err
	}
	if mode := cfg["ipam"]; mode != agentconfig.IPAMMultiPool {
		return nil, fmt.Errorf("the agent at %s does not run multi-pool pod IPAM (ipam is %q)", socket, mode)
	}
	v := &ipamView{cfg: cfg}
	v.in.Node = agentNode(cfg)
	if v.in.Allocations, err = fetchTable[*tables.PodIPAllocation](ctx, tables.PodIPAllocationsTableName); err != nil {
		return nil, err
	}
	if v.in.CIDRs, err = fetchTable[*tables.NodePodCIDR](ctx, tables.NodePodCIDRsTableName); err != nil {
		return nil, err
	}
	if v.kube, v.herald, err = kubeClients(); err != nil {
		return nil, err
	}
	if v.in.Pods, err = podsOf(ctx, v.kube, v.in.Node, v.in.Allocations); err != nil {
		return nil, err
	}
	if !cluster {
		return v, nil
	}
	cns, err := v.herald.CiliumV2().CiliumNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CiliumNodes: %w", err)
	}
	for i := range cns.Items {
		v.in.CiliumNodes = append(v.in.CiliumNodes, ipamcheck.CiliumNodeFromK8s(&cns.Items[i]))
	}
	pools, err := v.herald.CiliumV2alpha1().CiliumPodIPPools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CiliumPodIPPools: %w", err)
	}
	for i := range pools.Items {
		v.in.Pools = append(v.in.Pools, tables.PodIPPoolFromK8s(&pools.Items[i]))
	}
	return v, nil
}

// podsOf returns the node's Pods and, read one by one, the Pods of other
// names the allocations mention (gone, or elsewhere, or recreated).
func podsOf(ctx context.Context, kube kubernetes.Interface, node string, allocs []*tables.PodIPAllocation) ([]ipamcheck.Pod, error) {
	list, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, fmt.Errorf("listing the Pods of node %s: %w", node, err)
	}
	var out []ipamcheck.Pod
	seen := map[string]bool{}
	for _, p := range list.Items {
		out = append(out, ipamcheck.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), NodeName: p.Spec.NodeName})
		seen[p.Namespace+"/"+p.Name] = true
	}
	for _, a := range allocs {
		key := a.PodNS + "/" + a.PodName
		if seen[key] || a.PodNS == "" || a.PodName == "" {
			continue
		}
		seen[key] = true
		p, err := kube.CoreV1().Pods(a.PodNS).Get(ctx, a.PodName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading Pod %s: %w", key, err)
		}
		out = append(out, ipamcheck.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), NodeName: p.Spec.NodeName})
	}
	return out, nil
}

// releaseIP sends the DEL of the attachment holding ip to the agent and
// checks that the agent let go of its addresses.
func releaseIP(ctx context.Context, ip netip.Addr, ipamSocket string, force bool) error {
	v, err := readIPAMView(ctx, false)
	if err != nil {
		return err
	}
	plan, err := ipamcheck.PlanIPRelease(v.in, ip, force)
	if err != nil {
		return err
	}
	if plan.Warning != "" {
		fmt.Fprintf(os.Stderr, "Warning (--force): %s.\n", plan.Warning)
	}
	if ipamSocket == "" {
		ipamSocket = v.cfg["ipam-socket"]
	}
	if ipamSocket == "" {
		ipamSocket = ipamv1.DefaultSocket
	}
	if err := sendDel(ctx, ipamSocket, plan.Del); err != nil {
		return err
	}
	// The agent answers a DEL once its tables show the release: anything
	// of the attachment still there was not released.
	after, err := fetchTable[*tables.PodIPAllocation](ctx, tables.PodIPAllocationsTableName)
	if err != nil {
		return fmt.Errorf("the DEL went through; reading the allocations again: %w", err)
	}
	var left []string
	for _, a := range after {
		if a.ContainerID == plan.Del.ContainerID && a.IfName == plan.Del.IfName && slices.Contains(plan.IPs, a.IP) {
			left = append(left, a.IP.String())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("the agent accepted the DEL of container %s, interface %s, but still holds %s for it", plan.Del.ContainerID, plan.Del.IfName, strings.Join(left, ", "))
	}
	ips := make([]string, len(plan.IPs))
	for i, a := range plan.IPs {
		ips[i] = a.String()
	}
	fmt.Printf("Released %s on node %s: the agent ran the DEL of container %s, interface %s (pod %s).\n",
		strings.Join(ips, ", "), v.in.Node, plan.Del.ContainerID, plan.Del.IfName, plan.Pod)
	return nil
}

// sendDel speaks api/ipam/v1 to the agent, as the herald-ipam plugin does.
// Unlike the plugin it queues nothing when the agent does not answer: a
// release is done when the agent's journal says so, or not at all.
func sendDel(ctx context.Context, sock string, req ipamv1.DelRequest) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://herald-agent"+ipamv1.PathDel, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		return fmt.Errorf("sending the DEL to the agent's IPAM socket %s (--ipam-socket): %w", sock, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e ipamv1.Error
	if json.Unmarshal(data, &e) == nil && e.Msg != "" {
		return fmt.Errorf("the agent refused the DEL of container %s, interface %s: %s (CNI error %d)", req.ContainerID, req.IfName, e.Msg, e.Code)
	}
	return fmt.Errorf("the agent answered the DEL with %s: %s", resp.Status, strings.TrimSpace(string(data)))
}

// releaseCIDR removes the CIDR from the CiliumNode with a merge patch
// conditional on the version it was planned from; on a conflict it reads
// the CiliumNode again and plans again (the refusal too).
func releaseCIDR(ctx context.Context, cidr, node string, force bool) error {
	cfg, err := fetchConfig(ctx)
	if err != nil {
		return err
	}
	here := agentNode(cfg) == node
	_, herald, err := kubeClients()
	if err != nil {
		return err
	}
	api := herald.CiliumV2().CiliumNodes()
	var (
		plan       *ipamcheck.CIDRRelease
		before, rv string
	)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn, err := api.Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("there is no CiliumNode %s", node)
		}
		if err != nil {
			return fmt.Errorf("reading CiliumNode %s: %w", node, err)
		}
		var local []*tables.PodIPAllocation
		if here {
			// Fresher than status.ipam.used, which the agent writes a
			// moment after an allocation.
			if local, err = fetchTable[*tables.PodIPAllocation](ctx, tables.PodIPAllocationsTableName); err != nil {
				return err
			}
		}
		if plan, err = ipamcheck.PlanCIDRRelease(cn, cidr, local, force); err != nil {
			return err
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": cn.ResourceVersion},
			"spec":     map[string]any{"ipam": map[string]any{"pools": map[string]any{"allocated": plan.Allocated}}},
		})
		if err != nil {
			return err
		}
		out, err := api.Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: dbgFieldManager})
		if err != nil {
			return err
		}
		before, rv = cn.ResourceVersion, out.ResourceVersion
		return nil
	})
	if err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("CiliumNode %s kept changing while removing %s; nothing was written, run check again: %w", node, cidr, err)
		}
		return err
	}
	if plan.Warning != "" {
		fmt.Fprintf(os.Stderr, "Warning (--force): %s.\n", plan.Warning)
	}
	fmt.Printf("Removed %s (pool %s) from CiliumNode %s's spec.ipam.pools.allocated (resourceVersion %s -> %s).\n", plan.Removed, plan.Pool, node, before, rv)
	if len(plan.InUse) > 0 {
		fmt.Printf("Node %s's agent keeps the addresses in use and hands out nothing new from it; it forgets the CIDR when the last one is released.\n", node)
	}
	return nil
}
