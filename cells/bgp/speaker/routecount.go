package speaker

import (
	"context"

	api "github.com/osrg/gobgp/v3/api"
)

// advertisedCount is the number of prefixes of the family GoBGP sends the
// peer at addr (its Adj-RIB-Out after the export policies). ListPeer's own
// count cannot serve: with graceful restart it counts the End-of-RIB
// marker as one more path, so every family read one route too many. The
// table GetTable builds skips that marker.
func (s *speaker) advertisedCount(ctx context.Context, addr string, fam *api.Family) int {
	resp, err := s.srv.GetTable(ctx, &api.GetTableRequest{TableType: api.TableType_ADJ_OUT, Name: addr, Family: fam})
	if err != nil {
		// The peer went away between ListPeer and now: its next
		// refresh no longer lists it.
		return 0
	}
	return int(resp.GetNumPath())
}
