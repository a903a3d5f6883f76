package scripthive

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/script"
	"github.com/cilium/statedb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// Kube plays the ground floor's k8swatch for a scenario: it provides the
// tables k8swatch fills and the commands that fill them from manifests,
// written as a user writes them:
//
//	k8s/apply file...    objects in, or replaced
//	k8s/delete file...   objects out
//	k8s/synced           the initial lists are complete (without it the
//	                     tables are initialized at once, unless
//	                     WaitForSynced)
//
// Objects without a creationTimestamp get one, a second apart in the order
// applied, so that "older" means "applied earlier"; one applied again keeps
// its own. CRD defaults the API server would fill in are filled in.
func Kube(opts ...KubeOption) cell.Cell {
	var o kubeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return cell.Module("k8s-fake", "Tables fed from manifests by the script",
		cell.Provide(
			tables.NewServicesTable, statedb.RWTable[*tables.Service].ToTable,
			tables.NewLBPoolsTable, statedb.RWTable[*tables.LBPool].ToTable,
			tables.NewL2PoliciesTable, statedb.RWTable[*tables.L2Policy].ToTable,
			tables.NewNodesTable, statedb.RWTable[*tables.Node].ToTable,
			tables.NewEndpointSlicesTable, statedb.RWTable[*tables.EndpointSlice].ToTable,
			tables.NewBGPClusterConfigsTable, statedb.RWTable[*tables.BGPClusterConfig].ToTable,
			tables.NewBGPPeerConfigsTable, statedb.RWTable[*tables.BGPPeerConfig].ToTable,
			tables.NewBGPAdvertisementsTable, statedb.RWTable[*tables.BGPAdvertisement].ToTable,
			tables.NewBGPNodeOverridesTable, statedb.RWTable[*tables.BGPNodeOverride].ToTable,
			tables.NewBGPSecretsTable, statedb.RWTable[*tables.BGPSecret].ToTable,
			tables.NewBGPNodeConfigsTable, statedb.RWTable[*tables.BGPNodeConfig].ToTable,
			tables.NewBGPNodeOwnersTable, statedb.RWTable[*tables.BGPNodeOwner].ToTable,
			tables.NewPodIPPoolsTable, statedb.RWTable[*tables.PodIPPool].ToTable,
			tables.NewCiliumNodesTable, statedb.RWTable[*tables.CiliumNode].ToTable,
			func(p kubeParams) hive.ScriptCmdsOut { return newKube(p, o).commands() },
		),
	)
}

// KubeOption changes what Kube does.
type KubeOption func(*kubeOptions)

type kubeOptions struct{ waitForSynced bool }

// WaitForSynced leaves the tables uninitialized until the scenario says
// k8s/synced, for scenarios of what a cell does before the initial lists.
func WaitForSynced() KubeOption { return func(o *kubeOptions) { o.waitForSynced = true } }

type kubeParams struct {
	cell.In

	DB               *statedb.DB
	Services         statedb.RWTable[*tables.Service]
	LBPools          statedb.RWTable[*tables.LBPool]
	L2Policies       statedb.RWTable[*tables.L2Policy]
	Nodes            statedb.RWTable[*tables.Node]
	EndpointSlices   statedb.RWTable[*tables.EndpointSlice]
	BGPClusterConfig statedb.RWTable[*tables.BGPClusterConfig]
	BGPPeerConfigs   statedb.RWTable[*tables.BGPPeerConfig]
	BGPAdvertisement statedb.RWTable[*tables.BGPAdvertisement]
	BGPNodeOverrides statedb.RWTable[*tables.BGPNodeOverride]
	BGPSecrets       statedb.RWTable[*tables.BGPSecret]
	BGPNodeConfigs   statedb.RWTable[*tables.BGPNodeConfig]
	BGPNodeOwners    statedb.RWTable[*tables.BGPNodeOwner]
	PodIPPools       statedb.RWTable[*tables.PodIPPool]
	CiliumNodes      statedb.RWTable[*tables.CiliumNode]
}

type kube struct {
	kubeParams
	all    []statedb.TableMeta
	synced []func(statedb.WriteTxn)
	clock  time.Time
	kinds  map[string]func(wtxn statedb.WriteTxn, doc []byte, del bool) error
}

func newKube(p kubeParams, o kubeOptions) *kube {
	k := &kube{kubeParams: p, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	k.all = []statedb.TableMeta{p.Services, p.LBPools, p.L2Policies, p.Nodes, p.EndpointSlices,
		p.BGPClusterConfig, p.BGPPeerConfigs, p.BGPAdvertisement, p.BGPNodeOverrides, p.BGPSecrets, p.BGPNodeConfigs, p.BGPNodeOwners,
		p.PodIPPools, p.CiliumNodes}
	wtxn := p.DB.WriteTxn(k.all...)
	k.synced = []func(statedb.WriteTxn){
		p.Services.RegisterInitializer(wtxn, "script"), p.LBPools.RegisterInitializer(wtxn, "script"),
		p.L2Policies.RegisterInitializer(wtxn, "script"), p.Nodes.RegisterInitializer(wtxn, "script"),
		p.EndpointSlices.RegisterInitializer(wtxn, "script"), p.BGPClusterConfig.RegisterInitializer(wtxn, "script"),
		p.BGPPeerConfigs.RegisterInitializer(wtxn, "script"), p.BGPAdvertisement.RegisterInitializer(wtxn, "script"),
		p.BGPNodeOverrides.RegisterInitializer(wtxn, "script"), p.BGPSecrets.RegisterInitializer(wtxn, "script"),
		p.BGPNodeConfigs.RegisterInitializer(wtxn, "script"), p.BGPNodeOwners.RegisterInitializer(wtxn, "script"),
		p.PodIPPools.RegisterInitializer(wtxn, "script"), p.CiliumNodes.RegisterInitializer(wtxn, "script"),
	}
	if !o.waitForSynced {
		k.markSynced(wtxn)
	}
	wtxn.Commit()
	k.kinds = map[string]func(statedb.WriteTxn, []byte, bool) error{
		"Service": kind(p.Services, tables.ServiceFromK8s, func(wtxn statedb.WriteTxn, row *tables.Service) {
			if old, _, ok := p.Services.Get(wtxn, tables.ServiceKeyIndex.Query(row.Key())); ok {
				row.CreationTimestamp = old.CreationTimestamp
			} else if row.CreationTimestamp.IsZero() {
				row.CreationTimestamp = k.tick()
			}
		}),
		"CiliumLoadBalancerIPPool": kind(p.LBPools, func(o *v2alpha1.CiliumLoadBalancerIPPool) *tables.LBPool {
			if o.Spec.AllowFirstLastIPs == "" {
				o.Spec.AllowFirstLastIPs = v2alpha1.AllowFirstLastIPYes // the CRD default
			}
			return tables.LBPoolFromK8s(o)
		}, func(wtxn statedb.WriteTxn, row *tables.LBPool) {
			if old, _, ok := p.LBPools.Get(wtxn, tables.LBPoolNameIndex.Query(row.Name)); ok {
				row.CreationTimestamp = old.CreationTimestamp
			} else if row.CreationTimestamp.IsZero() {
				row.CreationTimestamp = k.tick()
			}
		}),
		"CiliumL2AnnouncementPolicy": kind(p.L2Policies, tables.L2PolicyFromK8s, nil),
		"Node":                       kind(p.Nodes, tables.NodeFromK8s, nil),
		"EndpointSlice":              kind(p.EndpointSlices, tables.EndpointSliceFromK8s, nil),
		"CiliumBGPClusterConfig": kind(p.BGPClusterConfig, tables.BGPClusterConfigFromK8s, func(wtxn statedb.WriteTxn, row *tables.BGPClusterConfig) {
			if old, _, ok := p.BGPClusterConfig.Get(wtxn, tables.BGPClusterConfigNameIndex.Query(row.Name)); ok {
				row.CreationTimestamp = old.CreationTimestamp
			} else if row.CreationTimestamp.IsZero() {
				row.CreationTimestamp = k.tick()
			}
		}),
		// Into both tables the agent fills from CiliumBGPNodeConfigs: the
		// node's own (any node's, here) and the contested ones.
		"CiliumBGPNodeConfig": func(wtxn statedb.WriteTxn, doc []byte, del bool) error {
			if err := kind(p.BGPNodeConfigs, tables.BGPNodeConfigFromK8s, nil)(wtxn, doc, del); err != nil {
				return err
			}
			var o v2alpha1.CiliumBGPNodeConfig
			if err := yaml.UnmarshalStrict(doc, &o); err != nil {
				return err
			}
			if _, contested := o.Labels[tables.BGPContestedLabel]; !contested {
				del = true
			}
			return kind(p.BGPNodeOwners, tables.BGPNodeOwnerFromK8s, nil)(wtxn, doc, del)
		},
		"CiliumBGPPeerConfig":         kind(p.BGPPeerConfigs, tables.BGPPeerConfigFromK8s, nil),
		"CiliumBGPAdvertisement":      kind(p.BGPAdvertisement, tables.BGPAdvertisementFromK8s, nil),
		"CiliumBGPNodeConfigOverride": kind(p.BGPNodeOverrides, tables.BGPNodeOverrideFromK8s, nil),
		"Secret":                      kind(p.BGPSecrets, tables.BGPSecretFromK8s, nil),
		"CiliumPodIPPool":             kind(p.PodIPPools, tables.PodIPPoolFromK8s, nil),
		"CiliumNode":                  kind(p.CiliumNodes, tables.CiliumNodeFromK8s, nil),
	}
	return k
}

// kind turns manifests of one kind into rows of its table; stamp, if
// set, fills in what the API server would (creationTimestamp).
func kind[K any, Obj any](tbl statedb.RWTable[Obj], convert func(*K) Obj, stamp func(statedb.WriteTxn, Obj)) func(statedb.WriteTxn, []byte, bool) error {
	return func(wtxn statedb.WriteTxn, doc []byte, del bool) error {
		var o K
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return err
		}
		row := convert(&o)
		if stamp != nil {
			stamp(wtxn, row)
		}
		if del {
			_, _, err := tbl.Delete(wtxn, row)
			return err
		}
		_, _, err := tbl.Insert(wtxn, row)
		return err
	}
}

func (k *kube) markSynced(wtxn statedb.WriteTxn) {
	for _, done := range k.synced {
		done(wtxn)
	}
	k.synced = nil
}

func (k *kube) tick() time.Time {
	k.clock = k.clock.Add(time.Second)
	return k.clock
}

func (k *kube) commands() hive.ScriptCmdsOut {
	return hive.NewScriptCmds(map[string]script.Cmd{
		"k8s/apply":  k.cmd(false),
		"k8s/delete": k.cmd(true),
		"k8s/synced": script.Command(
			script.CmdUsage{Summary: "Mark the initial lists of the Kubernetes objects as complete"},
			func(*script.State, ...string) (script.WaitFunc, error) {
				wtxn := k.DB.WriteTxn(k.all...)
				k.markSynced(wtxn)
				wtxn.Commit()
				return nil, nil
			}),
	})
}

func (k *kube) cmd(del bool) script.Cmd {
	summary := "Apply Kubernetes objects from manifests"
	if del {
		summary = "Delete Kubernetes objects given as manifests"
	}
	return script.Command(
		script.CmdUsage{Summary: summary, Args: "file..."},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			for _, file := range args {
				data, err := os.ReadFile(s.Path(file))
				if err != nil {
					return nil, err
				}
				if err := k.apply(data, del); err != nil {
					return nil, fmt.Errorf("%s: %w", file, err)
				}
			}
			return nil, nil
		})
}

// apply writes every object of a multi-document manifest in one
// transaction, as a burst of watch events would.
func (k *kube) apply(data []byte, del bool) error {
	wtxn := k.DB.WriteTxn(k.all...)
	defer wtxn.Abort()
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		if strings.TrimSpace(string(doc)) == "" {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		write, ok := k.kinds[meta.Kind]
		if !ok {
			return fmt.Errorf("kind %q is not one Herald reflects", meta.Kind)
		}
		if err := write(wtxn, doc, del); err != nil {
			return fmt.Errorf("%s: %w", meta.Kind, err)
		}
	}
	wtxn.Commit()
	return nil
}
