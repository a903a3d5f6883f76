// Package routeradv makes the node known to its BGP unnumbered peers: it
// sends IPv6 Router Advertisements on the interface of every unnumbered
// peer, periodically and in answer to a Router Solicitation. The peer (FRR,
// and every other implementation of BGP unnumbered) learns the node's
// link-local address from them, and accepts a session only from an address
// it learned so; GoBGP sends none itself. The advertisements carry no
// prefix, so nothing on the link configures an address from them.
//
// Reads: table bgp-instances (peers with autoDiscovery mode Unnumbered),
// table devices (which of their interfaces the node has).
// Writes: ICMPv6 Router Advertisements on those interfaces.
//
// Runs while the BGP control plane is on.
package routeradv

import (
	"log/slog"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"bgp-router-adverts",
	"IPv6 Router Advertisements for BGP unnumbered peers",

	cell.Invoke(register),
)

type params struct {
	cell.In

	BGP       bgpconfig.Config
	DB        *statedb.DB
	Instances statedb.Table[*tables.BGPInstance]
	Devices   statedb.Table[*tables.Device]
	Jobs      job.Group
	Log       *slog.Logger
}

func register(p params) {
	if !p.BGP.EnableBGPControlPlane {
		return
	}
	a := &advertiser{params: p, senders: map[string]*sender{}}
	p.Jobs.Add(job.OneShot("router-adverts", a.run))
}
