package cpvip

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
)

// vipDaemons is what announces the VIPs on the three nodes, for the
// benchmark: Herald's agents or keepalived.
type vipDaemons interface {
	Name() string
	// Start starts the daemon on every node.
	Start(cp *ControlPlane) error
	// Kill kills node n's daemon with SIGKILL; Restart starts it again as
	// it ran.
	Kill(n *CPNode) error
	Restart(n *CPNode) error
	// Settled says why the daemons are not all running and candidates for
	// the VIPs yet (nil when they are).
	Settled(cp *ControlPlane) error
	// Stop stops every node's daemon cleanly: it gives the VIPs up.
	Stop(cp *ControlPlane) error
	// Logs are the tails of the daemons' logs that ControlPlane.Logs
	// does not show.
	Logs(cp *ControlPlane) string
}

// heraldDaemons are the agents with their defaults.
type heraldDaemons struct{}

func (heraldDaemons) Name() string { return "herald" }

func (heraldDaemons) Start(cp *ControlPlane) error {
	for _, n := range cp.Nodes {
		if err := n.StartAgent(); err != nil {
			return err
		}
	}
	return nil
}

func (heraldDaemons) Kill(n *CPNode) error    { return n.KillAgent() }
func (heraldDaemons) Restart(n *CPNode) error { return n.StartAgent() }

func (heraldDaemons) Settled(cp *ControlPlane) error {
	for _, n := range cp.Nodes {
		if _, ok := n.AgentRunning(); !ok {
			return fmt.Errorf("%s: no agent", n.Name)
		}
	}
	return nil
}

func (heraldDaemons) Logs(*ControlPlane) string { return "" } // the agents' are in ControlPlane.Logs

func (heraldDaemons) Stop(cp *ControlPlane) error {
	var errs []error
	for _, n := range cp.Nodes {
		errs = append(errs, n.StopAgent())
	}
	return errors.Join(errs...)
}

// keepalivedDaemons are keepalived with the agent's health check: a
// prober asks the local /readyz with the agent's default period, timeout
// and thresholds (keepalived's own scripts run at most once a second) and
// keepalived tracks its verdict file.
type keepalivedDaemons struct {
	advert time.Duration
	confs  map[*CPNode]string
	ka     map[*CPNode]*Keepalived
	probes map[*CPNode]*KeepalivedProber
}

func newKeepalivedDaemons(advert time.Duration) *keepalivedDaemons {
	return &keepalivedDaemons{advert: advert, confs: map[*CPNode]string{},
		ka: map[*CPNode]*Keepalived{}, probes: map[*CPNode]*KeepalivedProber{}}
}

func (k *keepalivedDaemons) Name() string {
	return fmt.Sprintf("keepalived advert_int %s", k.advert)
}

// dir is where node n's keepalived and prober keep their files.
func (k *keepalivedDaemons) dir(n *CPNode) string { return filepath.Join(n.Dir, "keepalived") }

// readyzProber is the agent's /readyz check (cpvipconfig.Defaults) as a
// prober writing file.
func readyzProber(file string) KeepalivedProberOptions {
	d := cpvipconfig.Defaults
	return KeepalivedProberOptions{
		File:     file,
		Probe:    KeepalivedReadyzProbe(ReadyzURL, d.ReadyzTimeout),
		Interval: d.ReadyzPeriod,
		Fall:     d.ReadyzFailureThreshold,
		Rise:     d.ReadyzSuccessThreshold,
	}
}

func (k *keepalivedDaemons) Start(cp *ControlPlane) error {
	for _, n := range cp.Nodes {
		check := filepath.Join(k.dir(n), "check")
		p, err := StartKeepalivedProber(n.Host.Netns, k.dir(n), readyzProber(check))
		if err != nil {
			return err
		}
		k.probes[n] = p
		conf, err := KeepalivedConfig(cp.KeepalivedOptionsFor(n, k.advert, KeepalivedCheck{File: check}))
		if err != nil {
			return err
		}
		k.confs[n] = conf
		if err := k.Restart(n); err != nil {
			return err
		}
	}
	return nil
}

func (k *keepalivedDaemons) Kill(n *CPNode) error { return k.ka[n].Kill() }

func (k *keepalivedDaemons) Restart(n *CPNode) error {
	ka, err := StartKeepalived(n.Host.Netns, k.dir(n), k.confs[n])
	if err != nil {
		return err
	}
	k.ka[n] = ka
	return nil
}

// Settled: every keepalived and prober runs, and every instance is
// MASTER or BACKUP (a node whose check has not risen yet is in FAULT).
func (k *keepalivedDaemons) Settled(cp *ControlPlane) error {
	for _, n := range cp.Nodes {
		if closed(k.ka[n].done) || closed(k.probes[n].done) {
			return fmt.Errorf("%s: keepalived or its prober exited:\n%s%s", n.Name, k.ka[n].Logs(20), k.probes[n].Logs(10))
		}
		for _, inst := range []string{"vip4", "vip6"} {
			if s := k.ka[n].State(inst); s != "MASTER" && s != "BACKUP" {
				return fmt.Errorf("%s: keepalived's %s is in state %q", n.Name, inst, s)
			}
		}
	}
	return nil
}

func (k *keepalivedDaemons) Stop(cp *ControlPlane) error {
	var errs []error
	for _, n := range cp.Nodes {
		errs = append(errs, k.ka[n].Stop(), k.probes[n].Stop())
	}
	return errors.Join(errs...)
}

// Logs are the tails of every node's keepalived and prober logs.
func (k *keepalivedDaemons) Logs(cp *ControlPlane) string {
	var s string
	for _, n := range cp.Nodes {
		if k.ka[n] != nil {
			s += k.ka[n].Logs(30)
		}
		if k.probes[n] != nil {
			s += k.probes[n].Logs(10)
		}
	}
	return s
}
