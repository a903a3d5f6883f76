package l2policystatus

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/daemon/agentconfig"
	"github.com/heraldlb/herald/tables"
)

type policyStatusParams struct {
	cell.In

	Agent    agentconfig.Config
	Log      *slog.Logger
	DB       *statedb.DB
	Jobs     job.Group
	Client   versioned.Interface
	Policies statedb.Table[*tables.L2Policy]
}

// registerPolicyStatus reports broken policies in their status. Every agent
// computes the same conditions and writes only when they differ from what
// the policy shows, so the first agent's write settles it for all.
func registerPolicyStatus(p policyStatusParams) {
	if !p.Agent.EnableL2Announcements {
		return
	}
	p.Jobs.Add(job.OneShot("policy-status", func(ctx context.Context, health cell.Health) error {
		for {
			policies, watch := p.Policies.AllWatch(p.DB.ReadTxn())
			failed := false
			for pol := range policies {
				want, changed := policyConditions(pol, time.Now())
				if !changed {
					continue
				}
				if err := patchPolicyStatus(ctx, p.Client, pol, want); err != nil {
					p.Log.Warn("Cannot write policy status", "policy", pol.Name, "error", err)
					failed = true
				} else if pol.Broken() {
					p.Log.Warn("Invalid CiliumL2AnnouncementPolicy: it selects nothing until fixed", "policy", pol.Name,
						"serviceSelector", pol.ServiceSelectorError, "nodeSelector", pol.NodeSelectorError, "interfaces", pol.InterfaceError)
				}
			}
			retry := time.After(time.Hour)
			if failed {
				retry = time.After(5 * time.Second)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-watch:
			case <-retry:
			}
		}
	}))
}

// policyConditions returns the policy's conditions with the three error
// conditions as they should be, and whether that differs from its status.
// A condition is True (reason "error", the parse error as message) while
// its field is broken, and turns False once fixed; it is not added to a
// policy that never had the problem.
func policyConditions(pol *tables.L2Policy, now time.Time) ([]metav1.Condition, bool) {
	out := make([]metav1.Condition, 0, len(pol.Conditions)+3)
	changed := false
	checks := []struct{ typ, err string }{
		{tables.ConditionBadServiceSelector, pol.ServiceSelectorError},
		{tables.ConditionBadNodeSelector, pol.NodeSelectorError},
		{tables.ConditionBadInterfaceRegex, pol.InterfaceError},
	}
	ours := map[string]bool{}
	for _, c := range checks {
		ours[c.typ] = true
		old, had := findCondition(pol.Conditions, c.typ)
		if c.err == "" && !had {
			continue
		}
		want := metav1.Condition{Type: c.typ, Status: metav1.ConditionFalse, Reason: tables.ReasonResolved, ObservedGeneration: pol.Generation}
		if c.err != "" {
			want.Status, want.Reason, want.Message = metav1.ConditionTrue, tables.ReasonError, c.err
		}
		want.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
		if had && old.Status == want.Status {
			want.LastTransitionTime = old.LastTransitionTime
		}
		if !had || old.Status != want.Status || old.Reason != want.Reason || old.Message != want.Message || old.ObservedGeneration != want.ObservedGeneration {
			changed = true
		}
		out = append(out, want)
	}
	for _, c := range pol.Conditions {
		if !ours[c.Type] {
			out = append(out, c)
		}
	}
	return out, changed
}

func findCondition(cs []metav1.Condition, typ string) (metav1.Condition, bool) {
	for _, c := range cs {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

func patchPolicyStatus(ctx context.Context, client versioned.Interface, pol *tables.L2Policy, conds []metav1.Condition) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pol.UID},
		"status":   map[string]any{"conditions": conds},
	})
	if err != nil {
		return err
	}
	_, err = client.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Patch(ctx, pol.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}, "status")
	return err
}
