package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Lease timings that break the rules stop the agent with a message that
// names the options to fix, as troubleshooting.md quotes it ("The agent
// does not start"), whichever cell looks at them first (issue: the
// election cell did, and named the Lease; for L2 it named a renew deadline
// of -2s derived from the options, which nobody had set).
func TestBadLeaseTimingsNameTheirOptions(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unusedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--lb-ipam-lease-duration=1s"},
			"lb-ipam-lease-*: renew deadline 1s must be positive and shorter than the lease duration 1s"},
		{[]string{"--ipam=multi-pool", "--pod-ipam-lease-duration=1s"},
			"pod-ipam-lease-*: renew deadline 1s must be positive and shorter than the lease duration 1s"},
		{[]string{"--enable-l2-announcements", "--l2-announcements-lease-duration=1s"},
			"l2-announcements-lease-duration (1s) must be greater than 1s"},
		{[]string{"--enable-l2-announcements", "--l2-announcements-election=lease", "--l2-announcements-lease-duration=1s"},
			"l2-announcements-lease-duration (1s) must be greater than 1s"},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			h := New()
			flags := pflag.NewFlagSet("", pflag.ContinueOnError)
			h.RegisterFlags(flags)
			if err := flags.Parse(append([]string{"--node-name=node1", "--kubeconfig=" + kubeconfig}, tc.flags...)); err != nil {
				t.Fatal(err)
			}
			// Populate builds the clients and never connects.
			err := h.Populate(slog.New(slog.DiscardHandler))
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Errorf("Populate: %v\nwant an error ending in %q", err, tc.want)
			}
		})
	}
}
