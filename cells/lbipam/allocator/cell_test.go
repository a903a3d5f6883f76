package allocator

import (
	"testing"
	"time"
)

// TestConfigValidate: the agent refuses to start with lb-ipam-lease-*
// timings under which two allocators could write at once, and its message
// names the flags and the rule broken (tables.LeaseTimings.Validate has
// the rules in detail).
func TestConfigValidate(t *testing.T) {
	ms := time.Millisecond
	with := func(edit func(*Config)) Config {
		c := defaultConfig
		edit(&c)
		return c
	}
	for _, tt := range []struct {
		name string
		c    Config
		want string // "" = valid
	}{
		{"defaults", defaultConfig, ""},
		{"none", with(func(c *Config) { c.DefaultLBServiceIPAM = "none" }), ""},
		{"slower failover, fewer Lease writes", with(func(c *Config) {
			c.LBIPAMLeaseDuration, c.LBIPAMLeaseRenewDeadline, c.LBIPAMLeaseRetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
		}), ""},

		{"Cilium's node IPAM", with(func(c *Config) { c.DefaultLBServiceIPAM = "nodeipam" }),
			`default-lb-service-ipam: "nodeipam" is Cilium's node IPAM (Services get node addresses), which Herald does not have: use "lbipam", or "none" to leave Services without a loadBalancerClass to another controller`},
		{"unknown default IPAM", with(func(c *Config) { c.DefaultLBServiceIPAM = "cilium" }),
			`default-lb-service-ipam: "cilium" is not "lbipam" or "none"`},
		{"duration not whole seconds", with(func(c *Config) { c.LBIPAMLeaseDuration = 2500 * ms }),
			"lb-ipam-lease-*: lease duration 2.5s must be a whole number of seconds, at least 1s (the Lease stores whole seconds)"},
		{"renew deadline as long as the duration", with(func(c *Config) { c.LBIPAMLeaseRenewDeadline = 2 * time.Second }),
			"lb-ipam-lease-*: renew deadline 2s must be positive and shorter than the lease duration 2s"},
		{"no margin for a stale leader's writes", with(func(c *Config) { c.LBIPAMLeaseRenewDeadline = 1900 * ms }),
			"lb-ipam-lease-*: lease duration 2s minus renew deadline 1.9s leaves less than 250ms for a stale leader's last writes to land"},
		{"one renewal per deadline", with(func(c *Config) { c.LBIPAMLeaseRetryPeriod = time.Second }),
			"lb-ipam-lease-*: retry period 1s must be positive and at most half the renew deadline 1s (two renewals per deadline)"},
		{"shorter duration only", with(func(c *Config) { c.LBIPAMLeaseDuration = time.Second }),
			"lb-ipam-lease-*: renew deadline 1s must be positive and shorter than the lease duration 1s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("validate() = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Fatalf("validate() = nil, want %q", tt.want)
			case tt.want != "" && err.Error() != tt.want:
				t.Fatalf("validate() = %q, want %q", err, tt.want)
			}
		})
	}
}
