package status

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/cilium/statedb"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
)

// conditionWriter patches a BGP resource's status when its conditions
// should change (the bgp-resource-status reconciler's operations). Every
// agent computes the same rows and writes only what differs from what the
// object shows, so the first agent's write settles it for all.
type conditionWriter struct {
	client versioned.Interface
	log    *slog.Logger
	now    func() time.Time
}

func (w *conditionWriter) Update(ctx context.Context, _ statedb.ReadTxn, _ statedb.Revision, s *tables.BGPResourceStatus) error {
	conds, changed := applyConditions(s.Conditions, s.Want, tables.BGPManagedConditions(s.Kind), s.Generation, w.now())
	if !changed {
		return nil
	}
	for _, c := range s.Want {
		if old, had := findCondition(s.Conditions, c.Type); c.True && !(had && old.Status == metav1.ConditionTrue && old.Message == c.Message) {
			w.log.Warn("BGP resource has a problem", "kind", s.Kind, "name", s.Name, "condition", c.Type, "message", c.Message)
		}
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": s.UID}, "status": map[string]any{"conditions": conds}})
	if err != nil {
		return err
	}
	err = w.patch(ctx, s.Kind, s.Name, body)
	if k8serrors.IsNotFound(err) || k8serrors.IsConflict(err) {
		return nil // gone or replaced: its own row follows
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.Kind, s.Name, err)
	}
	return nil
}

func (w *conditionWriter) patch(ctx context.Context, kind, name string, body []byte) error {
	c, opts := w.client.CiliumV2alpha1(), metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}
	var err error
	switch kind {
	case v2alpha1.BGPClusterConfigKind:
		_, err = c.CiliumBGPClusterConfigs().Patch(ctx, name, types.MergePatchType, body, opts, "status")
	case v2alpha1.BGPPeerConfigKind:
		_, err = c.CiliumBGPPeerConfigs().Patch(ctx, name, types.MergePatchType, body, opts, "status")
	case v2alpha1.BGPAdvertisementKind:
		_, err = c.CiliumBGPAdvertisements().Patch(ctx, name, types.MergePatchType, body, opts, "status")
	default:
		err = fmt.Errorf("no status to write for kind %q", kind)
	}
	return err
}

// Delete: the resource is gone, and its status with it.
func (w *conditionWriter) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *tables.BGPResourceStatus) error {
	return nil
}

// Prune: nothing outside the table to remove.
func (w *conditionWriter) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*tables.BGPResourceStatus, statedb.Revision]) error {
	return nil
}
