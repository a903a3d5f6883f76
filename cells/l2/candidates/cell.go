// Package candidates derives what may be announced and by whom: every
// group of Services that must be answered for by one node (they share an
// IP), the nodes the L2 announcement policies allow to answer for it, and
// what this node would program if it owned it. Pure derivation (derive);
// the L2 elector picks the owners. A Service with no ready endpoint
// anywhere has no candidate node (unless enable-no-service-endpoints-
// routable); such Services, and those with externalTrafficPolicy: Local
// that no node may announce, get a Warning Event.
//
// Reads: tables services, l2-policies, nodes, devices, endpoint-slices,
// l2-members (the interfaces other nodes publish).
// Writes: table l2-candidates; Events.
package candidates

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"l2-candidates",
	"Derives the groups to announce and the nodes that may announce them",

	cell.Provide(reflections),
	cell.ProvidePrivate(tables.NewL2CandidatesTable),
	cell.Provide(statedb.RWTable[*tables.L2Candidate].ToTable),
	cell.Invoke(registerDerivation),
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(l2 l2config.Config) tables.Reflections {
	if !l2.EnableL2Announcements {
		return tables.Reflections{}
	}
	return tables.Reflect(tables.ServicesTableName, tables.L2PoliciesTableName, tables.NodesTableName, tables.EndpointSlicesTableName)
}
