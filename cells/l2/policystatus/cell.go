// Package policystatus reports, in each CiliumL2AnnouncementPolicy's
// status, the fields that do not parse (conditions
// io.cilium/bad-service-selector, io.cilium/bad-node-selector,
// io.cilium/bad-interface-regex).
//
// Reads: table l2-policies.
// Writes: table l2-policy-status (the wanted conditions, one row per
// policy), reconciled into the policies' status subresource.
package policystatus

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"l2-policy-status",
	"Reports broken L2 announcement policy fields in their status",

	cell.Provide(reflections),
	cell.ProvidePrivate(tables.NewL2PolicyStatusTable),
	cell.Provide(statedb.RWTable[*tables.L2PolicyStatus].ToTable),
	cell.Invoke(registerDerivation, registerReconciler),
)

type reconcilerParams struct {
	cell.In

	Agent     agentconfig.Config
	L2        l2config.Config
	Reconcile reconciler.Params
	Status    statedb.RWTable[*tables.L2PolicyStatus]
	Policies  statedb.Table[*tables.L2Policy]
	Client    versioned.Interface
}

// registerReconciler writes the rows into the policies' status. Every agent
// computes the same rows and writes only what differs from what the policy
// shows, so the first agent's write settles it for all.
func registerReconciler(p reconcilerParams) error {
	if !p.L2.EnableL2Announcements {
		return nil
	}
	w := &statusWriter{client: p.Client, policies: p.Policies, log: p.Reconcile.Log, now: time.Now}
	_, err := reconciler.Register(p.Reconcile, p.Status,
		(*tables.L2PolicyStatus).Clone,
		(*tables.L2PolicyStatus).SetStatus,
		(*tables.L2PolicyStatus).GetStatus,
		w, nil,
		reconciler.WithRetry(time.Second, time.Minute),
	)
	return err
}

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(l2 l2config.Config) tables.Reflections {
	if !l2.EnableL2Announcements {
		return tables.Reflections{}
	}
	return tables.Reflect(tables.L2PoliciesTableName)
}
