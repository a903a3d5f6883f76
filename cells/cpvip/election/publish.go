package election

import (
	"fmt"
	"time"

	"github.com/heraldlb/herald/tables"
)

// publish writes what this node hears and decides into
// control-plane-members and control-plane-vip, for herald-dbg, and logs
// the decision when its reason changes.
func (r *runner) publish(now time.Time) {
	why := r.why(now)
	wtxn := r.DB.WriteTxn(r.Members, r.VIP)
	present := 0
	for _, p := range r.st.Peers(now) {
		if p.Present {
			present++
		}
		row := &tables.ControlPlaneMember{Node: p.Name, Present: p.Present, Eligible: p.Eligible, Owning: p.Owning,
			LastHeard: p.LastHeard, Mismatch: r.mismatched[p.Name]}
		for _, q := range r.cfg.Peers {
			if q.Name == p.Name {
				row.Addr = q.Addr.String()
			}
		}
		if old, _, ok := r.Members.Get(wtxn, tables.ControlPlaneMemberNodeIndex.Query(p.Name)); !ok || memberChanged(old, row) {
			_, _, _ = r.Members.Insert(wtxn, row)
		}
	}
	v := &tables.ControlPlaneVIP{Node: r.cfg.Self, Preferred: r.st.Preferred(now), Answering: r.announced && r.withdrawal == "",
		Grantee: r.st.Grantee(), GrantedAt: r.st.GrantedAt(), Why: why}
	if v.Answering {
		v.Until = r.st.Deadline()
	}
	// GrantedAt moves with every grant; the row changes with the rest
	// (Until moves with every renewal while this node answers).
	if old, _, ok := r.VIP.Get(wtxn, tables.ControlPlaneVIPNodeIndex.Query(r.cfg.Self)); !ok || old.Why != v.Why || old.Answering != v.Answering ||
		old.Preferred != v.Preferred || old.Grantee != v.Grantee || !old.Until.Equal(v.Until) {
		_, _, _ = r.VIP.Insert(wtxn, v)
	}
	wtxn.Commit()
	r.m.present.Set(float64(present))
	if why != r.lastWhy {
		r.Log.Info("Control-plane VIP", "state", why)
		r.lastWhy = why
	}
}

// lastHeardEvery is how often a present member's LastHeard is refreshed:
// beats arrive every 50 ms, and a row rewritten that often would wake
// every watcher of the table for nothing.
const lastHeardEvery = time.Second

// memberChanged reports whether row says more than old: anything but
// LastHeard, or LastHeard a second later.
func memberChanged(old, row *tables.ControlPlaneMember) bool {
	o, n := *old, *row
	o.LastHeard, n.LastHeard = time.Time{}, time.Time{}
	return o != n || row.LastHeard.Sub(old.LastHeard) >= lastHeardEvery
}

// why says, in words, why this node answers for the VIPs or not.
func (r *runner) why(now time.Time) string {
	pref := r.st.Preferred(now)
	switch {
	case r.withdrawal != "":
		return "giving the VIPs up: " + r.withdrawal
	case r.announced:
		return "owner: a quorum granted this node"
	case r.misplaced != nil:
		return "not a candidate: " + r.misplaced.Error()
	case r.unfenced != nil:
		return "not a candidate: " + r.unfenced.Error()
	case r.routeErr != nil:
		return "not a candidate: " + r.routeErr.Error()
	case pref == r.cfg.Self && r.st.Grants() < r.st.Quorum():
		return fmt.Sprintf("candidate: waiting for a quorum of %d to grant this node", r.st.Quorum())
	case pref == r.cfg.Self:
		return "candidate: granted, taking the VIPs over"
	case pref == "":
		return "standby: no API server is ready on any present node, and no owner to keep"
	case r.ready == nil || !r.ready.Eligible:
		reason := "not probed yet"
		switch {
		case r.ready != nil && r.ready.Reason == "ready":
			reason = "ready, not yet for readyz-success-threshold probes in a row"
		case r.ready != nil:
			reason = r.ready.Reason
		}
		return fmt.Sprintf("standby: %s owns the VIPs or is first in line; the local API server is not ready (%s)", pref, reason)
	}
	return fmt.Sprintf("standby: %s owns the VIPs or is first in line", pref)
}
