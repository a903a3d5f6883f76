package routeradv

import (
	"context"
	"strings"
	"time"

	"github.com/cilium/hive/cell"
)

type advertiser struct {
	params
	senders map[string]*sender // by interface
}

// run keeps one sender per interface of interfaces(), until the agent
// stops.
func (a *advertiser) run(ctx context.Context, health cell.Health) error {
	defer func() {
		for name, s := range a.senders {
			s.stop()
			delete(a.senders, name)
		}
	}()
	for {
		iter, watch := a.Instances.AllWatch(a.DB.ReadTxn())
		want := interfaces(iter)
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
		health.OK("advertising on " + describe(names(want)))
		select {
		case <-ctx.Done():
			return nil
		case <-watch:
		}
	}
}

func describe(names []string) string {
	if len(names) == 0 {
		return "no interface"
	}
	return strings.Join(names, ", ")
}

// interval is how often a sender advertises unasked. A peer that
// starts asks (Router Solicitation) and is answered at once; one that
// restarted without asking waits at most this long.
const interval = 5 * time.Second
