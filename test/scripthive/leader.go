package scripthive

import (
	"context"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/script"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// Leader plays the election cell for a leader-only cell: it provides the
// leadership table, in which this agent leads lease (term 1) from the
// start, and the commands
//
//	leader/lose   the term ends
//	leader/lead   a new term starts
//
// Tables are always as fresh as the (imaginary) API server
// (tables.Freshness): the script writes them directly.
func Leader(lease string) cell.Cell {
	return cell.Module("election-fake", "The leadership the script decides",
		cell.Provide(
			tables.NewLeadershipTable,
			statedb.RWTable[*tables.Leadership].ToTable,
			func() tables.Freshness { return alwaysFresh{} },
			func(db *statedb.DB, l statedb.RWTable[*tables.Leadership]) hive.ScriptCmdsOut {
				return newLeaderCommands(db, l, lease)
			},
		),
	)
}

type alwaysFresh struct{}

func (alwaysFresh) CatchUp(context.Context, ...string) error { return nil }

type leaderCommands struct {
	db         *statedb.DB
	leadership statedb.RWTable[*tables.Leadership]
	lease      string
	term       uint64
}

func newLeaderCommands(db *statedb.DB, l statedb.RWTable[*tables.Leadership], lease string) hive.ScriptCmdsOut {
	k := &leaderCommands{db: db, leadership: l, lease: lease}
	wtxn := db.WriteTxn(l)
	k.setLeading(wtxn, true)
	wtxn.Commit()
	return hive.NewScriptCmds(map[string]script.Cmd{
		"leader/lose": k.cmd(false, "End this agent's term of "+lease),
		"leader/lead": k.cmd(true, "Start a new term of "+lease),
	})
}

func (k *leaderCommands) cmd(lead bool, summary string) script.Cmd {
	return script.Command(script.CmdUsage{Summary: summary},
		func(*script.State, ...string) (script.WaitFunc, error) {
			wtxn := k.db.WriteTxn(k.leadership)
			k.setLeading(wtxn, lead)
			wtxn.Commit()
			return nil, nil
		})
}

func (k *leaderCommands) setLeading(wtxn statedb.WriteTxn, lead bool) {
	row := &tables.Leadership{Lease: k.lease, Identity: "script", Holder: "someone-else", Term: k.term}
	if lead {
		k.term++
		row.Term, row.Leading, row.Holder = k.term, true, "script"
		row.ValidUntil = time.Now().Add(time.Hour)
	}
	_, _, _ = k.leadership.Insert(wtxn, row)
}
