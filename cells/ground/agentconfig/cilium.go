package agentconfig

import (
	"fmt"
	"log/slog"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"
)

// CiliumDatapath holds the options of Cilium's ConfigMap that the spec's
// L2 announcement manifests set and that configure Cilium's own Service
// load balancing, which Herald does not have: kube-proxy (or whatever
// proxies Services in the cluster) forwards the traffic of the IPs Herald
// announces. The spec's ConfigMap sets kube-proxy-replacement: true, and
// the agent refuses keys it does not know; so these are accepted, shown
// by herald-dbg config, and change nothing.
type CiliumDatapath struct {
	KubeProxyReplacement string // kube-proxy-replacement
	EnableExternalIPs    bool   // enable-external-ips
}

func (def CiliumDatapath) Flags(flags *pflag.FlagSet) {
	flags.String("kube-proxy-replacement", def.KubeProxyReplacement,
		`Cilium's kube-proxy replacement ("true" or "false"; also its older "strict", "partial", "probe", "disabled"); accepted for Cilium's ConfigMaps, changes nothing: Herald does no Service load balancing`)
	flags.Bool("enable-external-ips", def.EnableExternalIPs,
		"Cilium's load balancing of external IPs; accepted for Cilium's ConfigMaps, changes nothing: policies' externalIPs field decides what is announced")
}

// Validate accepts the values Cilium's agent accepts, the older ones
// (strict, partial, probe, disabled, which it no longer takes) included, so
// that a ConfigMap kept from an older Cilium starts the agent too; a typo
// is still worth stopping on.
func (c CiliumDatapath) Validate() error {
	switch c.KubeProxyReplacement {
	case "", "true", "false", "strict", "partial", "probe", "disabled":
		return nil
	}
	return fmt.Errorf(`kube-proxy-replacement: %q is not "true" or "false"`, c.KubeProxyReplacement)
}

// logIgnored says once, at start, that options which look like they
// matter do not, so that nobody takes Herald for a kube-proxy replacement.
func (c CiliumDatapath) logIgnored(log *slog.Logger) {
	switch c.KubeProxyReplacement {
	case "", "false", "disabled":
	default:
		log.Info("kube-proxy-replacement is ignored: Herald does no Service load balancing; kube-proxy (or another Service proxy) must forward the traffic of announced IPs")
	}
	if c.EnableExternalIPs {
		log.Info("enable-external-ips is ignored: Herald does no Service load balancing; a policy's externalIPs field decides whether external IPs are announced")
	}
}

// ciliumDatapathCell registers the options and checks them at start.
var ciliumDatapathCell = cell.Group(
	cell.Config(CiliumDatapath{}),
	cell.Invoke(func(c CiliumDatapath, log *slog.Logger) error {
		if err := c.Validate(); err != nil {
			return err
		}
		c.logIgnored(log)
		return nil
	}),
)
