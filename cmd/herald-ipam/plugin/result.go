package plugin

import (
	"errors"
	"fmt"
	"net"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

// toResult maps the agent's answer to an ADD into a CNI result: every
// address with its gateway, then the routes. routes, when not nil, replace
// the agent's (the ipam section's "routes"). An IPAM plugin names no
// interface: the main plugin puts the addresses on its own.
func toResult(resp *v1.AddResponse, routes []*types.Route) (*current.Result, error) {
	if len(resp.IPs) == 0 {
		return nil, errors.New("no addresses")
	}
	r := &current.Result{CNIVersion: current.ImplementedSpecVersion}
	for i, c := range resp.IPs {
		ip, n, err := net.ParseCIDR(c.Address)
		if err != nil {
			return nil, fmt.Errorf("ips[%d]: address %q is not an address with a prefix length", i, c.Address)
		}
		ipc := &current.IPConfig{Address: net.IPNet{IP: ip, Mask: n.Mask}}
		if c.Gateway != "" {
			gw := net.ParseIP(c.Gateway)
			if gw == nil {
				return nil, fmt.Errorf("ips[%d]: gateway %q is not an address", i, c.Gateway)
			}
			if (gw.To4() == nil) != (ip.To4() == nil) {
				return nil, fmt.Errorf("ips[%d]: gateway %s and address %s are of different families", i, c.Gateway, c.Address)
			}
			ipc.Gateway = gw
		}
		r.IPs = append(r.IPs, ipc)
	}

	if routes != nil {
		for _, rt := range routes {
			r.Routes = append(r.Routes, rt.Copy())
		}
		return r, nil
	}
	for i, rt := range resp.Routes {
		tr, err := parseRoute(rt.Dst, rt.GW)
		if err != nil {
			return nil, fmt.Errorf("routes[%d]: %w", i, err)
		}
		r.Routes = append(r.Routes, tr)
	}
	return r, nil
}
