package status

import (
	"context"
	"iter"
	"log/slog"
	"maps"
	"reflect"
	"time"

	"github.com/cilium/statedb"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
)

// minWriteInterval spaces this agent's writes of its CiliumBGPNodeConfig:
// session counters change with every route, and the API server needs to
// hear of them only now and then. The reconciler runs at most one round
// per interval; what changed meanwhile goes out together.
const minWriteInterval = 2 * time.Second

// nodeConfigWriter keeps this node's CiliumBGPNodeConfig as its
// bgp-node-status row says (the reconciler's operations): created with
// the first instance, deleted with the last, owned by the Node so that
// Kubernetes deletes it with the Node, and put back when someone else
// deletes or edits it.
type nodeConfigWriter struct {
	client versioned.Interface
	log    *slog.Logger
	name   string
	// report: enable-bgp-control-plane-status-report. Off, the status is
	// written empty, clearing what an earlier run reported, as Cilium's
	// agent does; the spec is written all the same.
	report bool
	// cur is the object as last read or written: nil when unknown, one
	// without a name when there is none.
	cur *v2alpha1.CiliumBGPNodeConfig
}

func (w *nodeConfigWriter) Update(ctx context.Context, _ statedb.ReadTxn, _ statedb.Revision, s *tables.BGPNodeStatus) error {
	w.notice(s.Seen)
	peers := map[string]*tables.BGPPeerState{}
	for _, p := range s.Peers {
		peers[p.Key()] = p
	}
	if err := w.sync(ctx, s, peers, owners(s.Node, s.NodeUID)); err != nil {
		w.cur = nil // read it again
		w.log.Warn("Could not write CiliumBGPNodeConfig; retrying", "node", w.name, "error", err)
		return err
	}
	return nil
}

// Delete: the row goes only when the agent stops; the object stays.
func (w *nodeConfigWriter) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *tables.BGPNodeStatus) error {
	return nil
}

// Prune: nothing else to remove.
func (w *nodeConfigWriter) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*tables.BGPNodeStatus, statedb.Revision]) error {
	return nil
}

// notice compares the object's resourceVersion as the API server last
// showed it ("": there is none) with the one this writer last read or
// wrote: when they differ, someone else may have changed it, and the
// writer reads it again. Its own writes show up with the versions it
// already has.
func (w *nodeConfigWriter) notice(seen string) {
	if w.cur == nil {
		return
	}
	exists := w.cur.Name != ""
	same := seen == "" && !exists || seen != "" && exists && seen == w.cur.ResourceVersion
	if !same {
		w.cur = nil
	}
}

// owners are the owner references the object should carry: this node's
// Node, once the agent has seen it (nil: unknown yet, leave them be).
func owners(node, uid string) []metav1.OwnerReference {
	if uid == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: types.UID(uid)}}
}

func (w *nodeConfigWriter) sync(ctx context.Context, s *tables.BGPNodeStatus, peers map[string]*tables.BGPPeerState, owned []metav1.OwnerReference) error {
	api := w.client.CiliumV2alpha1().CiliumBGPNodeConfigs()
	instances := s.Instances
	if w.cur == nil {
		cur, err := api.Get(ctx, w.name, metav1.GetOptions{})
		switch {
		case k8serrors.IsNotFound(err):
			cur = nil
		case err != nil:
			return err
		}
		w.cur = cur
		if cur == nil {
			w.cur = &v2alpha1.CiliumBGPNodeConfig{} // marks "read, none"
		}
	}
	exists := w.cur.Name != ""
	if len(instances) == 0 {
		if !exists {
			return nil
		}
		err := api.Delete(ctx, w.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &w.cur.UID}})
		if err != nil && !k8serrors.IsNotFound(err) {
			return err
		}
		w.cur = &v2alpha1.CiliumBGPNodeConfig{}
		return nil
	}
	spec := nodeSpec(instances)
	labels, annotations := ownerMeta(w.cur.Labels, w.cur.Annotations, s.ClusterConfig, s.Contested)
	if !exists {
		created, err := api.Create(ctx, &v2alpha1.CiliumBGPNodeConfig{
			ObjectMeta: metav1.ObjectMeta{Name: w.name, Labels: labels, Annotations: annotations, OwnerReferences: owned},
			Spec:       spec,
		}, metav1.CreateOptions{FieldManager: tables.HeraldFieldManager})
		if err != nil {
			return err
		}
		w.cur = created
	} else if !reflect.DeepEqual(w.cur.Spec, spec) || (owned != nil && !reflect.DeepEqual(w.cur.OwnerReferences, owned)) ||
		!maps.Equal(w.cur.Labels, labels) || !maps.Equal(w.cur.Annotations, annotations) {
		next := w.cur.DeepCopy()
		next.Spec, next.Labels, next.Annotations = spec, labels, annotations
		if owned != nil {
			next.OwnerReferences = owned
		}
		updated, err := api.Update(ctx, next, metav1.UpdateOptions{FieldManager: tables.HeraldFieldManager})
		if err != nil {
			return err
		}
		w.cur = updated
	}
	status := v2alpha1.CiliumBGPNodeStatus{}
	if w.report {
		status = nodeStatus(instances, peers, w.cur.Status.Conditions, w.cur.Generation, time.Now())
	}
	if statusEqual(w.cur.Status, status) {
		return nil
	}
	next := w.cur.DeepCopy()
	next.Status = status
	updated, err := api.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: tables.HeraldFieldManager})
	if err != nil {
		return err
	}
	w.cur = updated
	return nil
}

// statusEqual compares statuses as users read them: a condition's
// transition time alone does not make a write.
func statusEqual(a, b v2alpha1.CiliumBGPNodeStatus) bool {
	strip := func(s v2alpha1.CiliumBGPNodeStatus) v2alpha1.CiliumBGPNodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		return s
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// ownerMeta are the labels and annotations the object carries: Herald's
// managed-by label; the cluster config its instances come from, which
// keeps the node when another selects it too (tables.BGPOwnerOf); and,
// while several select the node, the label by which the other agents
// watch which one holds it. Others' labels and annotations stay.
func ownerMeta(curLabels, curAnnotations map[string]string, clusterConfig string, contested bool) (labels, annotations map[string]string) {
	labels, annotations = maps.Clone(curLabels), maps.Clone(curAnnotations)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/managed-by"] = "herald"
	delete(labels, tables.BGPContestedLabel)
	if contested {
		labels[tables.BGPContestedLabel] = "true"
	}
	delete(annotations, tables.BGPClusterConfigAnnotation)
	if clusterConfig != "" {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[tables.BGPClusterConfigAnnotation] = clusterConfig
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	return labels, annotations
}
