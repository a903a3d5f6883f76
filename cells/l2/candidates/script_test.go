package candidates

import (
	"net"
	"strconv"
	"testing"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/script"
	"github.com/cilium/statedb"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/scripthive"
)

// TestScript runs the scenarios in testdata/*.txtar: Services, policies,
// Nodes and EndpointSlices go in as manifests (k8s/apply, k8s/delete),
// this node's devices and the peers' published devices with device and
// member; the l2-candidates table comes out (db/cmp, db/show).
func TestScript(t *testing.T) {
	scripthive.Test(t, []string{"--enable-l2-announcements", "--node-name=node1"},
		cell.Group(
			scripthive.Kube(),
			cell.Module("l2-fake", "The devices and members the script sets",
				// The feature's switch, which cells/l2 registers.
				cell.Config(l2config.Defaults),
				cell.Provide(
					tables.NewDevicesTable, tables.NewL2MembersTable,
					statedb.RWTable[*tables.Device].ToTable,
					statedb.RWTable[*tables.L2Member].ToTable,
					func() record.EventRecorder { return record.NewFakeRecorder(100) },
					newScriptCommands,
				),
			),
		),
		Cell)
}

// scriptCommands feed the tables the devices cell and the members
// election would.
type scriptCommands struct {
	db      *statedb.DB
	devices statedb.RWTable[*tables.Device]
	members statedb.RWTable[*tables.L2Member]
}

func newScriptCommands(db *statedb.DB, d statedb.RWTable[*tables.Device], m statedb.RWTable[*tables.L2Member]) hive.ScriptCmdsOut {
	c := &scriptCommands{db: db, devices: d, members: m}
	// The device list is complete at once: the script starts from none.
	wtxn := db.WriteTxn(d)
	d.RegisterInitializer(wtxn, "script")(wtxn)
	wtxn.Commit()
	return hive.NewScriptCmds(map[string]script.Cmd{
		"device": script.Command(
			script.CmdUsage{Summary: "Add or replace one of this node's devices", Args: "name ifindex mac selected|not-selected"},
			func(_ *script.State, args ...string) (script.WaitFunc, error) {
				if len(args) != 4 {
					return nil, script.ErrUsage
				}
				index, err := strconv.Atoi(args[1])
				if err != nil {
					return nil, err
				}
				mac, err := net.ParseMAC(args[2])
				if err != nil {
					return nil, err
				}
				wtxn := c.db.WriteTxn(c.devices)
				_, _, _ = c.devices.Insert(wtxn, &tables.Device{Index: index, Name: args[0], HWAddr: tables.HardwareAddr(mac), Selected: args[3] == "selected"})
				wtxn.Commit()
				return nil, nil
			}),
		"member": script.Command(
			script.CmdUsage{Summary: "A peer publishes its selected devices", Args: "node device..."},
			func(_ *script.State, args ...string) (script.WaitFunc, error) {
				if len(args) < 1 {
					return nil, script.ErrUsage
				}
				wtxn := c.db.WriteTxn(c.members)
				_, _, _ = c.members.Insert(wtxn, &tables.L2Member{Node: args[0], State: tables.MemberAlive, Devices: append([]string{}, args[1:]...)})
				wtxn.Commit()
				return nil, nil
			}),
	})
}
