package election

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/lease"
	"github.com/heraldlb/herald/cells/internal/reconnect"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Elections  []tables.Election `group:"elections"`
	Agent      agentconfig.Config
	Kube       kubernetes.Interface
	DB         *statedb.DB
	Leadership statedb.RWTable[*tables.Leadership]
	Jobs       job.Group
	Log        *slog.Logger
	// Gate holds the followers' calls while the API server is unreachable
	// (k8sclient); without it they retry every retry period.
	Gate *reconnect.Gate `optional:"true"`
}

// Identity is unique per agent process, "<node>_<uuid>" like
// kube-controller-manager's: a restarted agent is a new candidate and waits
// for its predecessor's Lease to expire, because a predecessor that is only
// paused (not dead) could otherwise lead alongside it.
func newIdentity(node string) string { return node + "_" + string(uuid.NewUUID()) }

func registerCampaigns(p params) error {
	identity := newIdentity(p.Agent.Node())
	for _, el := range p.Elections {
		if err := el.Timings.Validate(); err != nil {
			return fmt.Errorf("Lease %s: %w", el.Lease, err)
		}
		api := lease.NewKube(p.Kube.CoordinationV1().Leases(p.Agent.K8sNamespace), el.Lease)
		if node := el.OwnerNode; node != "" {
			api.OwnedBy(func(ctx context.Context) ([]metav1.OwnerReference, error) { return lease.NodeOwner(ctx, p.Kube, node) })
		}
		id := identity
		if el.Identity != "" {
			id = el.Identity
		}
		c := &campaign{
			Elector: lease.NewElector(el.Lease, id, el.Timings, api, time.Now),
			api:     api,
			gate:    p.Gate,
			db:      p.DB,
			table:   p.Leadership,
			log:     p.Log.With("lease", p.Agent.K8sNamespace+"/"+el.Lease, "identity", id),
		}
		c.publish()
		p.Jobs.Add(job.OneShot("campaign-"+el.Lease, c.run))
	}
	return nil
}

// campaign runs one elector: it waits, calls it, and publishes its state.
type campaign struct {
	*lease.Elector
	api   *lease.Kube
	gate  *reconnect.Gate
	db    *statedb.DB
	table statedb.RWTable[*tables.Leadership]
	log   *slog.Logger

	lastErr   string
	lastErrAt time.Time
	// failedAt is when the latest API call failed.
	failedAt time.Time
	// nextRenew paces renewals whatever else wakes the loop.
	nextRenew time.Time
}

type sighting struct {
	r  *lease.Record
	at time.Time
}

func (c *campaign) run(ctx context.Context, health cell.Health) error {
	sightings := make(chan sighting, 16)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go c.api.Watch(watchCtx, c.pause,
		func(r *lease.Record, at time.Time) {
			select {
			case sightings <- sighting{r, at}:
			case <-watchCtx.Done():
			}
		},
		func(err error) { c.log.Debug("Lease watch failed, restarting", "error", err) })

	health.OK("campaigning")
	for {
		// A leader renews every retry period; a follower wakes when the
		// Lease may be taken over, or when it sees the Lease change.
		wait := time.Until(c.nextRenew)
		if !c.Leading() {
			wait = time.Until(c.TakeoverAt())
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			c.stop(health)
			return nil
		case s := <-sightings:
			timer.Stop()
			c.see(s, health)
		case <-timer.C:
			if c.Leading() {
				c.renewOnce(ctx, health)
			} else {
				c.acquireOnce(ctx, health)
			}
			c.nextRenew = time.Now().Add(c.Timings().RetryPeriod)
			c.publish()
		}
	}
}

func (c *campaign) renewOnce(ctx context.Context, health cell.Health) {
	wasLapsed, term := c.Lapsed(), c.Term()
	err := c.Renew(ctx)
	switch {
	case !c.Leading():
		c.log.Warn("Lost leadership: another agent wrote the Lease", "term", term, "error", err)
		health.OK("following")
	case err != nil:
		c.report(err, health)
	default:
		c.report(nil, health)
		if wasLapsed {
			c.log.Info("Lease renewed again, writes resume", "term", term)
			health.OK(fmt.Sprintf("leading, term %d", term))
		}
	}
}

func (c *campaign) acquireOnce(ctx context.Context, health cell.Health) {
	started, err := c.TryAcquire(ctx)
	c.report(err, health)
	if err != nil && c.gate != nil && reconnect.Unreachable(err) {
		// A follower waits for the API server with the agent's watches:
		// one probe per agent while it is down, not one read every retry
		// period, and no burst of reads the moment it is back. The leader
		// renews on its own schedule: its term depends on it.
		_ = c.gate.Wait(ctx)
	}
	switch {
	case started:
		c.log.Info("Became leader", "term", c.Term())
		health.OK(fmt.Sprintf("leading, term %d", c.Term()))
	case err == nil:
		health.OK("following " + dashIfEmpty(c.State().Holder))
	}
}

// pause comes between two watches of the Lease: until the API server is
// ready again if it was unreachable, else a retry period.
func (c *campaign) pause(ctx context.Context, err error) {
	if c.gate != nil && reconnect.Unreachable(err) {
		_ = c.gate.Wait(ctx)
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(c.Timings().RetryPeriod):
	}
}

func (c *campaign) see(s sighting, health cell.Health) {
	holder := c.State().Holder
	c.Observe(s.r, s.at)
	if c.Leading() {
		return
	}
	// A follower reads the Lease only through its watch while the leader
	// renews it: a sighting after failed calls is the sign that the API
	// server answers again.
	recovered := c.lastErr != "" && s.at.After(c.failedAt)
	if recovered {
		c.report(nil, health)
	}
	if recovered || holder != c.State().Holder {
		health.OK("following " + dashIfEmpty(c.State().Holder))
		c.publish()
	}
}

// stop ends the campaign on shutdown: the term ends here first (no write
// of this agent goes out after this), then the Lease is released. By now
// the cells that write under the Lease have stopped: they started after
// this job and stop before it.
func (c *campaign) stop(health cell.Health) {
	wasLeading, term := c.Leading(), c.Term()
	ctx, cancel := context.WithTimeout(context.Background(), c.Timings().RenewDeadline)
	defer cancel()
	err := c.Release(ctx, c.publish)
	switch {
	case !wasLeading:
	case err != nil:
		c.log.Warn("Could not release the Lease; the others take over when it expires", "term", term, "error", err)
	default:
		c.log.Info("Left leadership", "term", term)
	}
	health.Stopped("stopped")
}

// report logs API errors without flooding: the first of a kind, then at
// most every ten seconds while it repeats.
func (c *campaign) report(err error, health cell.Health) {
	if err == nil {
		if c.lastErr != "" {
			c.log.Info("Lease API calls succeed again")
			c.lastErr = ""
		}
		return
	}
	if c.Leading() && c.Lapsed() {
		health.Degraded(fmt.Sprintf("leading, term %d, but renewals fail: writes are on hold", c.Term()), err)
	} else if !c.Leading() {
		health.Degraded("campaigning, Lease API failing", err)
	}
	now := time.Now()
	c.failedAt = now
	if err.Error() != c.lastErr || now.Sub(c.lastErrAt) > 10*time.Second {
		c.log.Warn("Lease election", "term", c.Term(), "leading", c.Leading(), "error", err)
		c.lastErr, c.lastErrAt = err.Error(), now
	}
}

func (c *campaign) publish() {
	wtxn := c.db.WriteTxn(c.table)
	_, _, _ = c.table.Insert(wtxn, c.State())
	wtxn.Commit()
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "(nobody)"
	}
	return s
}
