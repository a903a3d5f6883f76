package cmd

import (
	"context"

	"github.com/heraldlb/herald/cells/lbipam/allocator"
	"github.com/heraldlb/herald/tables"
)

// snapshot is what LB IPAM decisions are made from, read from the agent.
type snapshot struct {
	config   map[string]string
	pools    []*tables.LBPool
	services []*tables.Service
}

func fetchSnapshot(ctx context.Context) (*snapshot, error) {
	cfg, err := fetchConfig(ctx)
	if err != nil {
		return nil, err
	}
	pools, err := fetchTable[*tables.LBPool](ctx, tables.LBPoolsTableName)
	if err != nil {
		return nil, err
	}
	services, err := fetchTable[*tables.Service](ctx, tables.ServicesTableName)
	if err != nil {
		return nil, err
	}
	return &snapshot{config: cfg, pools: pools, services: services}, nil
}

// families and responsibility reproduce the agent's settings.
func (s *snapshot) families() allocator.Families {
	return allocator.Families{IPv4: s.config["enable-ipv4"] == "true", IPv6: s.config["enable-ipv6"] == "true"}
}

func (s *snapshot) responsibility() allocator.Responsibility {
	return allocator.Responsibility{
		DefaultIPAM: s.config["default-lb-service-ipam"] != "none",
		L2:          s.config["enable-l2-announcements"] == "true",
		BGP:         s.config["enable-bgp-control-plane"] == "true",
	}
}
