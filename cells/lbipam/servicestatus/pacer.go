package servicestatus

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cilium/hive/cell"
	"k8s.io/apimachinery/pkg/runtime"
)

// eventf is what the status writer needs of an Event recorder.
type eventf interface {
	Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// pacer holds back the Events of a burst of status writes, so that they do
// not compete with the writes for the API server: while Service statuses
// are being written, Events go out at busyEvery; once the writer has been
// idle for quietAfter, at idleEvery. Every Event still goes out, in order,
// unless maxQueued are waiting (then the newest are dropped, counted and
// logged): an Event is the Service's history, `kubectl describe` shows it,
// but the IP in the status is what the user waits for. Measured with 1000
// new Services, one Event per Service next to the status writes cost the
// API server a fifth of its CPU and the last Service 0.5 s.
type pacer struct {
	out eventf
	log *slog.Logger
	now func() time.Time

	mu        sync.Mutex
	queue     []pendingEvent
	lastWrite time.Time
	dropped   int
	wake      chan struct{}
}

type pendingEvent struct {
	obj                    runtime.Object
	eventtype, reason, msg string
}

const (
	quietAfter = 500 * time.Millisecond
	// busyEvery: 5 Events a second while writes go on.
	busyEvery = 200 * time.Millisecond
	// idleEvery: 50 a second after; half of the agent's default client rate
	// limit, so the recorder (which drops what it cannot send) keeps up.
	idleEvery = 20 * time.Millisecond
	maxQueued = 20000
)

func newPacer(out eventf, log *slog.Logger) *pacer {
	return &pacer{out: out, log: log, now: time.Now, wake: make(chan struct{}, 1)}
}

// Eventf queues an Event.
func (p *pacer) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) >= maxQueued {
		p.dropped++
		return
	}
	p.queue = append(p.queue, pendingEvent{obj: obj, eventtype: eventtype, reason: reason, msg: fmt.Sprintf(messageFmt, args...)})
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// wrote tells the pacer a status write is going out.
func (p *pacer) wrote() {
	p.mu.Lock()
	p.lastWrite = p.now()
	p.mu.Unlock()
}

// interval is how long to wait after sending an Event at now.
func interval(now, lastWrite time.Time) time.Duration {
	if now.Sub(lastWrite) < quietAfter {
		return busyEvery
	}
	return idleEvery
}

// next takes the oldest queued Event and says how long to wait after it.
func (p *pacer) next() (pendingEvent, time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped > 0 {
		p.log.Warn("Service Events dropped: too many waiting; the Services' status conditions say the same",
			"dropped", p.dropped, "waiting", len(p.queue))
		p.dropped = 0
	}
	if len(p.queue) == 0 {
		return pendingEvent{}, 0, false
	}
	ev := p.queue[0]
	p.queue[0] = pendingEvent{}
	p.queue = p.queue[1:]
	return ev, interval(p.now(), p.lastWrite), true
}

// run sends the queued Events until ctx ends, then hands the rest to the
// recorder at once (it sends what it can before the agent exits).
func (p *pacer) run(ctx context.Context, _ cell.Health) error {
	for {
		ev, wait, ok := p.next()
		if !ok {
			select {
			case <-ctx.Done():
				p.flush() // queued since the last look
				return nil
			case <-p.wake:
				continue
			}
		}
		p.out.Eventf(ev.obj, ev.eventtype, ev.reason, "%s", ev.msg)
		select {
		case <-ctx.Done():
			p.flush()
			return nil
		case <-time.After(wait):
		}
	}
}

func (p *pacer) flush() {
	for {
		ev, _, ok := p.next()
		if !ok {
			return
		}
		p.out.Eventf(ev.obj, ev.eventtype, ev.reason, "%s", ev.msg)
	}
}
