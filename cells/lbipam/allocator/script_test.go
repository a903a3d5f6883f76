package allocator

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/hive/script"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/scripthive"
)

// TestScript runs the scenarios in testdata/*.txtar: Kubernetes objects go
// in with k8s/apply and k8s/delete (plain manifests, as a user writes them),
// the allocator's tables come out (db/cmp, db/show).
func TestScript(t *testing.T) {
	scripthive.Test(t, nil,
		cell.Module("k8s-fake", "Tables fed by the script",
			cell.ProvidePrivate(func(r job.Registry, h cell.Health, l *slog.Logger) job.Group {
				return r.NewGroup(h, job.WithLogger(l))
			}),
			// The classes the announcers would ask for: --lb-classes.
			cell.Config(announcers{}),
			cell.Provide(announcers.classes),
			cell.Provide(
				tables.NewServicesTable, tables.NewLBPoolsTable, tables.NewLeadershipTable,
				statedb.RWTable[*tables.Service].ToTable,
				statedb.RWTable[*tables.LBPool].ToTable,
				statedb.RWTable[*tables.Leadership].ToTable,
				func() tables.Freshness { return alwaysFresh{} },
				newK8sCommands,
			),
		),
		Cell)
}

// announcers plays the features that ask LB IPAM for their
// loadBalancerClass (tables.LBClass): a scenario names them on its "#!"
// line, e.g. --lb-classes=io.cilium/l2-announcer.
type announcers struct {
	LBClasses []string // lb-classes
}

func (def announcers) Flags(flags *pflag.FlagSet) {
	flags.StringSlice("lb-classes", def.LBClasses, "loadBalancerClasses the announcers that are on ask for")
}

func (a announcers) classes() tables.LBClasses {
	var out tables.LBClasses
	for _, c := range a.LBClasses {
		out.Classes = append(out.Classes, tables.LBClass{Class: c})
	}
	return out
}

// alwaysFresh: the script writes the tables directly, so they are always
// as fresh as the (imaginary) API server.
type alwaysFresh struct{}

func (alwaysFresh) CatchUp(context.Context, ...string) error { return nil }

// k8sCommands turns manifests into table rows, as the k8s-watch cell does,
// and plays the election cell: the agent leads (term 1) until the script
// says otherwise with leader/lose and leader/lead.
type k8sCommands struct {
	db         *statedb.DB
	services   statedb.RWTable[*tables.Service]
	pools      statedb.RWTable[*tables.LBPool]
	leadership statedb.RWTable[*tables.Leadership]
	term       uint64
	// clock stamps objects without a creationTimestamp, one second apart
	// in the order applied, so "older" means "applied earlier".
	clock time.Time
	// synced marks both tables initialized, as the reflectors do after
	// their initial list.
	synced func(statedb.WriteTxn)
}

func newK8sCommands(db *statedb.DB, s statedb.RWTable[*tables.Service], p statedb.RWTable[*tables.LBPool], l statedb.RWTable[*tables.Leadership]) hive.ScriptCmdsOut {
	k := &k8sCommands{db: db, services: s, pools: p, leadership: l, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	wtxn := db.WriteTxn(s, p, l)
	doneSvcs := s.RegisterInitializer(wtxn, "script")
	donePools := p.RegisterInitializer(wtxn, "script")
	k.setLeading(wtxn, true)
	wtxn.Commit()
	k.synced = func(txn statedb.WriteTxn) { doneSvcs(txn); donePools(txn) }
	return hive.NewScriptCmds(map[string]script.Cmd{
		"k8s/apply":  k.cmd(false),
		"k8s/delete": k.cmd(true),
		"k8s/synced": script.Command(
			script.CmdUsage{Summary: "Mark the initial list of Services and pools as complete"},
			func(*script.State, ...string) (script.WaitFunc, error) {
				wtxn := k.db.WriteTxn(k.services, k.pools)
				k.synced(wtxn)
				wtxn.Commit()
				return nil, nil
			}),
		"leader/lose": k.leaderCmd(false, "End this agent's LB IPAM term"),
		"leader/lead": k.leaderCmd(true, "Start a new LB IPAM term"),
	})
}

func (k *k8sCommands) leaderCmd(lead bool, summary string) script.Cmd {
	return script.Command(script.CmdUsage{Summary: summary},
		func(*script.State, ...string) (script.WaitFunc, error) {
			wtxn := k.db.WriteTxn(k.leadership)
			k.setLeading(wtxn, lead)
			wtxn.Commit()
			return nil, nil
		})
}

func (k *k8sCommands) setLeading(wtxn statedb.WriteTxn, lead bool) {
	row := &tables.Leadership{Lease: tables.LBIPAMLease, Identity: "script", Holder: "someone-else", Term: k.term}
	if lead {
		k.term++
		row.Term, row.Leading, row.Holder = k.term, true, "script"
		row.ValidUntil = time.Now().Add(time.Hour)
	}
	_, _, _ = k.leadership.Insert(wtxn, row)
}

func (k *k8sCommands) cmd(del bool) script.Cmd {
	return script.Command(
		script.CmdUsage{Summary: "Apply or delete Services and pools from a manifest", Args: "file..."},
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

func (k *k8sCommands) apply(data []byte, del bool) error {
	docs := bytes.Split(data, []byte("\n---"))
	wtxn := k.db.WriteTxn(k.services, k.pools)
	defer wtxn.Abort()
	for _, doc := range docs {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		switch meta.Kind {
		case "Service":
			var svc corev1.Service
			if err := yaml.UnmarshalStrict(doc, &svc); err != nil {
				return err
			}
			row := tables.ServiceFromK8s(&svc)
			if old, _, ok := k.services.Get(wtxn, tables.ServiceKeyIndex.Query(row.Key())); ok {
				row.CreationTimestamp = old.CreationTimestamp
			} else if row.CreationTimestamp.IsZero() {
				row.CreationTimestamp = k.tick()
			}
			if del {
				_, _, _ = k.services.Delete(wtxn, row)
			} else {
				_, _, _ = k.services.Insert(wtxn, row)
			}
		case "CiliumLoadBalancerIPPool":
			var pool v2alpha1.CiliumLoadBalancerIPPool
			if err := yaml.UnmarshalStrict(doc, &pool); err != nil {
				return err
			}
			if pool.Spec.AllowFirstLastIPs == "" {
				pool.Spec.AllowFirstLastIPs = v2alpha1.AllowFirstLastIPYes // the CRD default
			}
			row := tables.LBPoolFromK8s(&pool)
			if old, _, ok := k.pools.Get(wtxn, tables.LBPoolNameIndex.Query(row.Name)); ok {
				row.CreationTimestamp = old.CreationTimestamp
			} else if row.CreationTimestamp.IsZero() {
				row.CreationTimestamp = k.tick()
			}
			if del {
				_, _, _ = k.pools.Delete(wtxn, row)
			} else {
				_, _, _ = k.pools.Insert(wtxn, row)
			}
		case "":
			continue
		default:
			return fmt.Errorf("unsupported kind %q", meta.Kind)
		}
	}
	wtxn.Commit()
	return nil
}

func (k *k8sCommands) tick() time.Time {
	k.clock = k.clock.Add(time.Second)
	return k.clock
}
