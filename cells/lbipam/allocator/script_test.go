package allocator

import (
	"context"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/script"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/scripthive"
)

// TestScript runs the scenarios in testdata/*.txtar: Kubernetes objects go
// in with k8s/apply and k8s/delete (plain manifests, as a user writes them),
// the allocator's tables come out (db/cmp, db/show).
func TestScript(t *testing.T) {
	scripthive.Test(t, nil,
		cell.Group(
			scripthive.Kube(scripthive.WaitForSynced()),
			cell.Module("election-fake", "The leadership the script decides",
				// The classes the announcers would ask for: --lb-classes.
				cell.Config(announcers{}),
				cell.Provide(
					announcers.classes,
					tables.NewLeadershipTable,
					statedb.RWTable[*tables.Leadership].ToTable,
					func() tables.Freshness { return alwaysFresh{} },
					newLeaderCommands,
				),
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

// leaderCommands play the election cell: the agent leads (term 1) until
// the script says otherwise with leader/lose and leader/lead.
type leaderCommands struct {
	db         *statedb.DB
	leadership statedb.RWTable[*tables.Leadership]
	term       uint64
}

func newLeaderCommands(db *statedb.DB, l statedb.RWTable[*tables.Leadership]) hive.ScriptCmdsOut {
	k := &leaderCommands{db: db, leadership: l}
	wtxn := db.WriteTxn(l)
	k.setLeading(wtxn, true)
	wtxn.Commit()
	return hive.NewScriptCmds(map[string]script.Cmd{
		"leader/lose": k.leaderCmd(false, "End this agent's LB IPAM term"),
		"leader/lead": k.leaderCmd(true, "Start a new LB IPAM term"),
	})
}

func (k *leaderCommands) leaderCmd(lead bool, summary string) script.Cmd {
	return script.Command(script.CmdUsage{Summary: summary},
		func(*script.State, ...string) (script.WaitFunc, error) {
			wtxn := k.db.WriteTxn(k.leadership)
			k.setLeading(wtxn, lead)
			wtxn.Commit()
			return nil, nil
		})
}

func (k *leaderCommands) setLeading(wtxn statedb.WriteTxn, lead bool) {
	row := &tables.Leadership{Lease: tables.LBIPAMLease, Identity: "script", Holder: "someone-else", Term: k.term}
	if lead {
		k.term++
		row.Term, row.Leading, row.Holder = k.term, true, "script"
		row.ValidUntil = time.Now().Add(time.Hour)
	}
	_, _, _ = k.leadership.Insert(wtxn, row)
}
