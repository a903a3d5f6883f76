package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	k8serrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Agent          agentconfig.Config
	BGP            bgpconfig.Config
	Log            *slog.Logger
	DB             *statedb.DB
	Jobs           job.Group
	Client         versioned.Interface
	Instances      statedb.Table[*tables.BGPInstance]
	Peers          statedb.Table[*tables.BGPPeerState]
	ClusterConfigs statedb.Table[*tables.BGPClusterConfig]
	PeerConfigs    statedb.Table[*tables.BGPPeerConfig]
	Adverts        statedb.Table[*tables.BGPAdvertisement]
	Secrets        statedb.Table[*tables.BGPSecret]
	Nodes          statedb.Table[*tables.Node]
	NodeConfigs    statedb.Table[*tables.BGPNodeConfig]
}

// minWriteInterval spaces this agent's status writes: session counters
// change with every route, and the API server needs to hear of them only
// now and then. State changes wait at most this long.
const minWriteInterval = 2 * time.Second

func registerNodeConfigWriter(p params) {
	if !p.BGP.EnableBGPControlPlane {
		return
	}
	p.Jobs.Add(job.OneShot("node-config", func(ctx context.Context, health cell.Health) error {
		if err := tables.WaitInitialized(ctx, p.DB, p.Instances, p.NodeConfigs, p.Nodes); err != nil {
			return nil
		}
		w := &nodeConfigWriter{p: p, name: p.Agent.Node()}
		for {
			txn := p.DB.ReadTxn()
			insts, w1 := p.Instances.AllWatch(txn)
			peers, w2 := p.Peers.AllWatch(txn)
			seen, _, w3, _ := p.NodeConfigs.GetWatch(txn, tables.BGPNodeConfigNameIndex.Query(w.name))
			self, _, w4, _ := p.Nodes.GetWatch(txn, tables.NodeNameIndex.Query(w.name))
			byKey := map[string]*tables.BGPPeerState{}
			for s := range peers {
				byKey[s.Key()] = s
			}
			w.notice(seen)
			err := w.sync(ctx, statedb.Collect(insts), byKey, self)
			if err != nil {
				w.cur = nil // read it again
				health.Degraded("writing CiliumBGPNodeConfig "+w.name, err)
				p.Log.Warn("Could not write CiliumBGPNodeConfig; retrying", "node", w.name, "error", err)
			} else {
				health.OK("CiliumBGPNodeConfig " + w.name + " up to date")
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(minWriteInterval):
			}
			if err != nil {
				continue // try again, whether or not the tables changed
			}
			select {
			case <-ctx.Done():
				return nil
			case <-w1:
			case <-w2:
			case <-w3:
			case <-w4:
			}
		}
	}))
}

// nodeConfigWriter keeps this node's CiliumBGPNodeConfig as the tables
// say: created with the first instance, deleted with the last, owned by
// the Node so that Kubernetes deletes it with the Node, and put back when
// someone else deletes or edits it.
type nodeConfigWriter struct {
	p    params
	name string
	// cur is the object as last read or written: nil when unknown, one
	// without a name when there is none.
	cur *v2alpha1.CiliumBGPNodeConfig
}

// notice compares the object as the API server last showed it (nil: there
// is none) with the one this writer last read or wrote: when they differ,
// someone else may have changed it, and the writer reads it again. Its own
// writes show up with the versions it already has.
func (w *nodeConfigWriter) notice(seen *tables.BGPNodeConfig) {
	if w.cur == nil {
		return
	}
	exists := w.cur.Name != ""
	same := seen == nil && !exists || seen != nil && exists && seen.ResourceVersion == w.cur.ResourceVersion
	if !same {
		w.cur = nil
	}
}

// owners are the owner references the object should carry: this node's
// Node, once the agent has seen it (nil: unknown yet, leave them be).
func owners(self *tables.Node) []metav1.OwnerReference {
	if self == nil || self.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: self.Name, UID: types.UID(self.UID)}}
}

func (w *nodeConfigWriter) sync(ctx context.Context, instances []*tables.BGPInstance, peers map[string]*tables.BGPPeerState, self *tables.Node) error {
	api := w.p.Client.CiliumV2alpha1().CiliumBGPNodeConfigs()
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
	owned := owners(self)
	if !exists {
		created, err := api.Create(ctx, &v2alpha1.CiliumBGPNodeConfig{
			ObjectMeta: metav1.ObjectMeta{Name: w.name, Labels: map[string]string{"app.kubernetes.io/managed-by": "herald"}, OwnerReferences: owned},
			Spec:       spec,
		}, metav1.CreateOptions{FieldManager: tables.HeraldFieldManager})
		if err != nil {
			return err
		}
		w.cur = created
	} else if !reflect.DeepEqual(w.cur.Spec, spec) || (owned != nil && !reflect.DeepEqual(w.cur.OwnerReferences, owned)) {
		next := w.cur.DeepCopy()
		next.Spec = spec
		if owned != nil {
			next.OwnerReferences = owned
		}
		updated, err := api.Update(ctx, next, metav1.UpdateOptions{FieldManager: tables.HeraldFieldManager})
		if err != nil {
			return err
		}
		w.cur = updated
	}
	status := nodeStatus(instances, peers, w.cur.Status.Conditions, w.cur.Generation, time.Now())
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

func registerConditionWriter(p params) {
	if !p.BGP.EnableBGPControlPlane {
		return
	}
	p.Jobs.Add(job.OneShot("conditions", func(ctx context.Context, health cell.Health) error {
		if err := tables.WaitInitialized(ctx, p.DB, p.ClusterConfigs, p.PeerConfigs, p.Adverts, p.Secrets, p.Nodes); err != nil {
			return nil
		}
		for {
			txn := p.DB.ReadTxn()
			ccs, w1 := p.ClusterConfigs.AllWatch(txn)
			pcs, w2 := p.PeerConfigs.AllWatch(txn)
			advs, w3 := p.Adverts.AllWatch(txn)
			secrets, w4 := p.Secrets.AllWatch(txn)
			nodes, w5 := p.Nodes.AllWatch(txn)
			err := writeConditions(ctx, p, statedb.Collect(ccs), statedb.Collect(pcs), statedb.Collect(advs), statedb.Collect(secrets), statedb.Collect(nodes))
			var retry <-chan time.Time
			if err != nil {
				health.Degraded("writing BGP resource conditions", err)
				p.Log.Warn("Could not write BGP resource conditions; retrying", "error", err)
				retry = time.After(minWriteInterval)
			} else {
				health.OK("BGP resource conditions up to date")
			}
			select {
			case <-ctx.Done():
				return nil
			case <-w1:
			case <-w2:
			case <-w3:
			case <-w4:
			case <-w5:
			case <-retry:
			}
		}
	}))
}

func writeConditions(ctx context.Context, p params, ccs []*tables.BGPClusterConfig, pcs []*tables.BGPPeerConfig, advs []*tables.BGPAdvertisement,
	secrets []*tables.BGPSecret, nodes []*tables.Node) error {
	now := time.Now()
	pcByName := map[string]*tables.BGPPeerConfig{}
	for _, pc := range pcs {
		pcByName[pc.Name] = pc
	}
	secretByName := map[string]*tables.BGPSecret{}
	for _, s := range secrets {
		secretByName[s.Name] = s
	}
	c := p.Client.CiliumV2alpha1()
	var errs []error
	write := func(kind, name, uid string, generation int64, current []metav1.Condition, problems []problem,
		patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) error) {
		conds, changed := applyProblems(current, problems, generation, now)
		if !changed {
			return
		}
		for _, pr := range problems {
			if pr.message != "" {
				p.Log.Warn("BGP resource has a problem", "kind", kind, "name", name, "condition", pr.typ, "message", pr.message)
			}
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": map[string]any{"conditions": conds}})
		if err == nil {
			err = patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}, "status")
		}
		if err != nil && !k8serrors.IsNotFound(err) && !k8serrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
		}
	}
	for _, cc := range ccs {
		write(v2alpha1.BGPClusterConfigKind, cc.Name, cc.UID, cc.Generation, cc.Conditions, clusterConfigProblems(cc, ccs, nodes, pcByName),
			func(ctx context.Context, n string, t types.PatchType, b []byte, o metav1.PatchOptions, s ...string) error {
				_, err := c.CiliumBGPClusterConfigs().Patch(ctx, n, t, b, o, s...)
				return err
			})
	}
	for _, pc := range pcs {
		write(v2alpha1.BGPPeerConfigKind, pc.Name, pc.UID, pc.Generation, pc.Conditions, peerConfigProblems(pc, secretByName, p.BGP.BGPSecretsNamespace),
			func(ctx context.Context, n string, t types.PatchType, b []byte, o metav1.PatchOptions, s ...string) error {
				_, err := c.CiliumBGPPeerConfigs().Patch(ctx, n, t, b, o, s...)
				return err
			})
	}
	for _, a := range advs {
		write(v2alpha1.BGPAdvertisementKind, a.Name, a.UID, a.Generation, a.Conditions, advertisementProblems(a),
			func(ctx context.Context, n string, t types.PatchType, b []byte, o metav1.PatchOptions, s ...string) error {
				_, err := c.CiliumBGPAdvertisements().Patch(ctx, n, t, b, o, s...)
				return err
			})
	}
	return errors.Join(errs...)
}
