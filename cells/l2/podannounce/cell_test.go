package podannounce

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// TestConfigAtStart: the feature on without an interface stops the agent
// at start, naming both keys; every other combination starts.
func TestConfigAtStart(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"--enable-l2-pod-announcements"}, "l2-pod-announcements-interface must name the interface to announce pod addresses on (e.g. eth0) when enable-l2-pod-announcements is true"},
		{[]string{"--enable-l2-pod-announcements", "--ipam=multi-pool"}, "l2-pod-announcements-interface must name"},
		{[]string{"--enable-l2-pod-announcements", "--l2-pod-announcements-interface=eth0", "--ipam=multi-pool"}, ""},
		// Without multi-pool IPAM: a warning, no refusal.
		{[]string{"--enable-l2-pod-announcements", "--l2-pod-announcements-interface=eth0"}, ""},
		// Off: the interface is not looked at.
		{[]string{"--l2-pod-announcements-interface=eth0"}, ""},
	} {
		name := strings.Join(tt.args, " ")
		if name == "" {
			name = "defaults"
		}
		t.Run(name, func(t *testing.T) {
			h := hive.NewWithOptions(hive.Options{
				ModulePrivateProviders: cell.ModulePrivateProviders{
					func(r job.Registry, h cell.Health, l *slog.Logger) job.Group { return r.NewGroup(h, job.WithLogger(l)) },
				},
			},
				cell.SimpleHealthCell, job.Cell, statedb.Cell, agentconfig.Cell,
				cell.Provide(
					func(db *statedb.DB) (statedb.Table[*tables.PodIPAllocation], error) {
						return tables.NewPodIPAllocationsTable(db)
					},
					func(db *statedb.DB) (statedb.Table[*tables.Device], error) { return tables.NewDevicesTable(db) },
				),
				Cell,
			)
			flags := pflag.NewFlagSet("", pflag.ContinueOnError)
			h.RegisterFlags(flags)
			if err := flags.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := h.Populate(hivetest.Logger(t, hivetest.LogLevel(slog.LevelError)))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
