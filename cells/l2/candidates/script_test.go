package candidates

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/script"
	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
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
		cell.Module("k8s-fake", "Tables fed by the script",
			// The feature's switch, which cells/l2 registers.
			cell.Config(l2config.Defaults),
			cell.Provide(
				tables.NewServicesTable, tables.NewL2PoliciesTable, tables.NewNodesTable,
				tables.NewEndpointSlicesTable, tables.NewDevicesTable, tables.NewL2MembersTable,
				statedb.RWTable[*tables.Service].ToTable,
				statedb.RWTable[*tables.L2Policy].ToTable,
				statedb.RWTable[*tables.Node].ToTable,
				statedb.RWTable[*tables.EndpointSlice].ToTable,
				statedb.RWTable[*tables.Device].ToTable,
				statedb.RWTable[*tables.L2Member].ToTable,
				func() record.EventRecorder { return record.NewFakeRecorder(100) },
				newScriptCommands,
			),
		),
		Cell)
}

// scriptCommands feed the input tables as the k8s-watch, devices and
// l2-elector cells would.
type scriptCommands struct {
	db       *statedb.DB
	services statedb.RWTable[*tables.Service]
	policies statedb.RWTable[*tables.L2Policy]
	nodes    statedb.RWTable[*tables.Node]
	slices   statedb.RWTable[*tables.EndpointSlice]
	devices  statedb.RWTable[*tables.Device]
	members  statedb.RWTable[*tables.L2Member]
}

func newScriptCommands(db *statedb.DB, s statedb.RWTable[*tables.Service], p statedb.RWTable[*tables.L2Policy], n statedb.RWTable[*tables.Node],
	e statedb.RWTable[*tables.EndpointSlice], d statedb.RWTable[*tables.Device], m statedb.RWTable[*tables.L2Member]) hive.ScriptCmdsOut {
	c := &scriptCommands{db: db, services: s, policies: p, nodes: n, slices: e, devices: d, members: m}
	// The reflectors' initial lists are complete at once: the script
	// starts from empty tables.
	wtxn := db.WriteTxn(s, p, n, e, d)
	for _, done := range []func(statedb.WriteTxn){
		s.RegisterInitializer(wtxn, "script"), p.RegisterInitializer(wtxn, "script"), n.RegisterInitializer(wtxn, "script"),
		e.RegisterInitializer(wtxn, "script"), d.RegisterInitializer(wtxn, "script"),
	} {
		done(wtxn)
	}
	wtxn.Commit()
	return hive.NewScriptCmds(map[string]script.Cmd{
		"k8s/apply":  c.k8s(false),
		"k8s/delete": c.k8s(true),
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

func (c *scriptCommands) k8s(del bool) script.Cmd {
	return script.Command(
		script.CmdUsage{Summary: "Apply or delete Services, policies, Nodes and EndpointSlices from manifests", Args: "file..."},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			for _, file := range args {
				data, err := os.ReadFile(s.Path(file))
				if err != nil {
					return nil, err
				}
				if err := c.apply(data, del); err != nil {
					return nil, fmt.Errorf("%s: %w", file, err)
				}
			}
			return nil, nil
		})
}

func (c *scriptCommands) apply(data []byte, del bool) error {
	wtxn := c.db.WriteTxn(c.services, c.policies, c.nodes, c.slices)
	defer wtxn.Abort()
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		if strings.TrimSpace(string(doc)) == "" {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		var err error
		switch meta.Kind {
		case "Service":
			var o corev1.Service
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				put(c.services, wtxn, tables.ServiceFromK8s(&o), del)
			}
		case "CiliumL2AnnouncementPolicy":
			var o v2alpha1.CiliumL2AnnouncementPolicy
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				put(c.policies, wtxn, tables.L2PolicyFromK8s(&o), del)
			}
		case "Node":
			var o corev1.Node
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				put(c.nodes, wtxn, tables.NodeFromK8s(&o), del)
			}
		case "EndpointSlice":
			var o discoveryv1.EndpointSlice
			if err = yaml.UnmarshalStrict(doc, &o); err == nil {
				put(c.slices, wtxn, tables.EndpointSliceFromK8s(&o), del)
			}
		default:
			return fmt.Errorf("kind %q is not one this test feeds", meta.Kind)
		}
		if err != nil {
			return err
		}
	}
	wtxn.Commit()
	return nil
}

func put[T any](tbl statedb.RWTable[T], wtxn statedb.WriteTxn, row T, del bool) {
	if del {
		_, _, _ = tbl.Delete(wtxn, row)
	} else {
		_, _, _ = tbl.Insert(wtxn, row)
	}
}
