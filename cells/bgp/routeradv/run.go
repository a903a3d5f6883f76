package routeradv

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/cilium/hive/cell"
)

type advertiser struct {
	params
	senders map[string]*sender // by interface
	missing []string           // interfaces of peers the node does not have
}

// run keeps one sender per interface of interfaces() that the node has,
// until the agent stops.
func (a *advertiser) run(ctx context.Context, health cell.Health) error {
	defer func() {
		for name, s := range a.senders {
			s.stop()
			delete(a.senders, name)
		}
	}()
	for {
		txn := a.DB.ReadTxn()
		insts, instWatch := a.Instances.AllWatch(txn)
		devs, devWatch := a.Devices.AllWatch(txn)
		want, missing := onLink(interfaces(insts), devs)
		a.noteMissing(missing)
		for name, s := range a.senders {
			if _, ok := want[name]; !ok {
				s.stop()
				delete(a.senders, name)
				a.Log.Info("Stopped Router Advertisements for BGP unnumbered peers", "interface", name)
			}
		}
		for _, name := range names(want) {
			if a.senders[name] == nil {
				a.senders[name] = start(ctx, a.Log, name)
				a.Log.Info("Sending Router Advertisements for BGP unnumbered peers", "interface", name)
			}
			a.senders[name].solicit.Store(want[name])
		}
		health.OK(describe(names(want), missing))
		select {
		case <-ctx.Done():
			return nil
		case <-instWatch:
		case <-devWatch:
		}
	}
}

// noteMissing logs each interface that became missing, once.
func (a *advertiser) noteMissing(missing []string) {
	for _, name := range missing {
		if !slices.Contains(a.missing, name) {
			a.Log.Info("The interface of a BGP unnumbered peer is not on this node, or has no IPv6 link-local address; advertising once it has",
				"interface", name)
		}
	}
	a.missing = missing
}

func describe(advertising, missing []string) string {
	s := "advertising on no interface"
	if len(advertising) > 0 {
		s = "advertising on " + strings.Join(advertising, ", ")
	}
	if len(missing) > 0 {
		s += "; waiting for " + strings.Join(missing, ", ")
	}
	return s
}

// interval is how often a sender advertises unasked. A peer that
// starts asks (Router Solicitation) and is answered at once; one that
// restarted without asking waits at most this long.
const interval = 5 * time.Second
