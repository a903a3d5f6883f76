// Package plugin is the CNI IPAM plugin herald-ipam: a thin client of the
// agent on the same node, which it asks over a unix socket (api/ipam/v1).
// A main plugin such as bridge delegates to it for the addresses of an
// attachment. Every decision (pool, address, journal) is the agent's; the
// plugin maps CNI verbs to requests and answers to CNI results and errors,
// and keeps a DEL it could not deliver (pendingdel.go).
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

// Versions are the CNI spec versions herald-ipam speaks. Results convert
// down to every one of them; skel refuses CHECK below 0.4.0 and GC and
// STATUS below 1.1.0.
var Versions = version.All

// About is what the plugin prints when run without CNI_COMMAND.
const About = "herald-ipam: CNI IPAM plugin of Herald; asks the herald agent on the node (default socket " + v1.DefaultSocket + ")"

// Plugin runs the CNI verbs.
type Plugin struct {
	// Stdout receives ADD's result.
	Stdout io.Writer
	// Stderr receives notes for the runtime's log (a queued DEL).
	Stderr io.Writer
}

// Funcs are the verbs for skel.PluginMainFuncs.
func (p *Plugin) Funcs() skel.CNIFuncs {
	return skel.CNIFuncs{Add: p.Add, Del: p.Del, Check: p.Check, GC: p.GC, Status: p.Status}
}

// Add asks the agent for the attachment's addresses and prints them as a
// CNI result in the configuration's version.
func (p *Plugin) Add(args *skel.CmdArgs) error {
	conf, err := ParseConfig(args.StdinData)
	if err != nil {
		return err
	}
	pod, err := requirePod(args.Args)
	if err != nil {
		return err
	}
	req := v1.AddRequest{
		Attachment: v1.Attachment{ContainerID: args.ContainerID, IfName: args.IfName},
		Netns:      args.Netns,
		Network:    conf.Network,
		Pod:        pod,
		Bridge:     conf.Bridge,
	}
	var resp v1.AddResponse
	if err := newClient(conf.IPAM.Socket).call(context.Background(), addTimeout, methodPost, v1.PathAdd, req, &resp); err != nil {
		return tryAgainIfUnreachable(err)
	}
	res, err := toResult(&resp, conf.Routes)
	if err != nil {
		return types.NewError(types.ErrInternal, "herald-ipam: the agent's answer to ADD is not usable", err.Error())
	}
	// The agent has the attachment now; an older queued DEL of it must
	// not be replayed. Not fatal: the addresses are given.
	if err := dropPendingDel(conf.IPAM.StateDir, req.Attachment); err != nil {
		fmt.Fprintf(p.Stderr, "herald-ipam: removing a stale queued DEL of %s/%s: %v\n", args.ContainerID, args.IfName, err)
	}
	out, err := res.GetAsVersion(conf.CNIVersion)
	if err != nil {
		return types.NewError(types.ErrIncompatibleCNIVersion, "herald-ipam: cannot express the result in CNI "+conf.CNIVersion, err.Error())
	}
	return out.PrintTo(p.Stdout)
}

// Del asks the agent to release the attachment's addresses. It needs neither
// the network namespace (it may be gone) nor the agent: when the agent does
// not answer, the DEL is queued for it and succeeds.
func (p *Plugin) Del(args *skel.CmdArgs) error {
	conf, err := ParseConfig(args.StdinData)
	if err != nil {
		return err
	}
	// The Pod is informative in a DEL (the attachment is the key): CNI_ARGS
	// the plugin cannot read must not keep a Pod from going away.
	pod, _ := parsePod(args.Args)
	req := v1.DelRequest{
		Attachment: v1.Attachment{ContainerID: args.ContainerID, IfName: args.IfName},
		Pod:        pod,
	}
	err = newClient(conf.IPAM.Socket).call(context.Background(), delTimeout, methodPost, v1.PathDel, req, nil)
	var unreachable *unreachableError
	switch {
	case err == nil:
		if err := dropPendingDel(conf.IPAM.StateDir, req.Attachment); err != nil {
			fmt.Fprintf(p.Stderr, "herald-ipam: removing a queued DEL the agent has now seen: %v\n", err)
		}
		return nil
	case errors.As(err, &unreachable):
		path, qerr := queueDel(conf.IPAM.StateDir, req)
		if qerr != nil {
			return types.NewError(types.ErrIOFailure,
				fmt.Sprintf("herald-ipam: the herald agent is not reachable at %s and the DEL cannot be queued in %s", conf.IPAM.Socket, conf.IPAM.StateDir),
				fmt.Sprintf("%v; %v", qerr, err))
		}
		fmt.Fprintf(p.Stderr, "herald-ipam: %v; DEL of %s/%s queued in %s for the agent\n", err, args.ContainerID, args.IfName, path)
		return nil
	default:
		return err
	}
}

// Check asks the agent whether the attachment still holds the addresses of
// its result.
func (p *Plugin) Check(args *skel.CmdArgs) error {
	conf, err := ParseConfig(args.StdinData)
	if err != nil {
		return err
	}
	if conf.PrevResult == nil {
		return types.NewError(types.ErrInvalidNetworkConfig, "herald-ipam: CHECK without a prevResult", "")
	}
	pod, err := parsePod(args.Args)
	if err != nil {
		return err
	}
	req := v1.CheckRequest{
		Attachment: v1.Attachment{ContainerID: args.ContainerID, IfName: args.IfName},
		Pod:        pod,
		IPs:        make([]string, 0, len(conf.PrevResult.IPs)),
	}
	for _, ip := range conf.PrevResult.IPs {
		req.IPs = append(req.IPs, ip.Address.String())
	}
	err = newClient(conf.IPAM.Socket).call(context.Background(), checkTimeout, methodPost, v1.PathCheck, req, nil)
	return tryAgainIfUnreachable(err)
}

// GC tells the agent which attachments of the network the runtime still
// uses; the agent releases the others.
func (p *Plugin) GC(args *skel.CmdArgs) error {
	conf, err := ParseConfig(args.StdinData)
	if err != nil {
		return err
	}
	// An absent list is not an empty one: releasing every address of the
	// network because a runtime left the key out would hand the addresses
	// of running Pods to new ones.
	if !conf.HasValidAttachments {
		return types.NewError(types.ErrInvalidNetworkConfig, "herald-ipam: GC without cni.dev/valid-attachments; nothing released", "")
	}
	req := v1.GCRequest{Network: conf.Network, ValidAttachments: conf.ValidAttachments}
	err = newClient(conf.IPAM.Socket).call(context.Background(), gcTimeout, methodPost, v1.PathGC, req, nil)
	return tryAgainIfUnreachable(err)
}

// The error codes of STATUS (CNI 1.1), which pkg/types has no names for.
const (
	errPluginNotAvailable  uint = 50
	errLimitedConnectivity uint = 51
)

// Status reports whether an ADD can succeed now: error 50 (plugin not
// available) when the agent says it is not ready or does not answer.
func (p *Plugin) Status(args *skel.CmdArgs) error {
	conf, err := ParseConfig(args.StdinData)
	if err != nil {
		return err
	}
	var st v1.StatusResponse
	err = newClient(conf.IPAM.Socket).call(context.Background(), statusTimeout, methodGet, v1.PathStatus, nil, &st)
	var unreachable *unreachableError
	var cniErr *types.Error
	switch {
	case errors.As(err, &unreachable):
		return types.NewError(errPluginNotAvailable,
			fmt.Sprintf("herald-ipam: the herald agent is not reachable at %s", conf.IPAM.Socket), unreachable.err.Error())
	case errors.As(err, &cniErr):
		// STATUS may only fail with 50 or 51 (CNI spec, STATUS).
		if cniErr.Code != errPluginNotAvailable && cniErr.Code != errLimitedConnectivity {
			return types.NewError(errPluginNotAvailable, cniErr.Msg, cniErr.Details)
		}
		return cniErr
	case err != nil:
		return err
	case !st.Ready:
		msg := st.Message
		if msg == "" {
			msg = "the herald agent is not ready"
		}
		return types.NewError(errPluginNotAvailable, msg, "")
	}
	return nil
}

// tryAgainIfUnreachable turns an agent that does not answer into CNI error
// 11: the runtime retries, and by then the agent may be back.
func tryAgainIfUnreachable(err error) error {
	var unreachable *unreachableError
	if errors.As(err, &unreachable) {
		return types.NewError(types.ErrTryAgainLater,
			fmt.Sprintf("herald-ipam: the herald agent is not reachable at %s; try again later", unreachable.socket),
			unreachable.err.Error())
	}
	return err
}
