package cpvip

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The API loop's defaults: a request every 50 ms, each given up after
// 2 s; the connection is dialed with a 1 s timeout and kept alive between
// requests, as kubectl's transport does.
const (
	APIEvery       = 50 * time.Millisecond
	APITimeout     = 2 * time.Second
	APIDialTimeout = 1 * time.Second
)

// APIRequest is one GET of the loop.
type APIRequest struct {
	Start, End time.Time
	Err        error // nil: it succeeded
}

// ErrNoAnswerYet is the Err of the request the loop was waiting on when it
// stopped: not failed, but not answered either (a request the frozen
// owner's API server accepted waits until the node thaws or the client
// gives up). Its End is when the loop stopped.
var ErrNoAnswerYet = errors.New("no answer yet when the loop stopped")

// FailureWindow is a run of failed requests: from the start of the first
// to the start of the next request that succeeded (or the end of the last
// failed one, if none did). A request still waiting for its answer when
// the loop stopped has not failed: it is in no window.
type FailureWindow struct {
	From, To time.Time
	Failures int
	FirstErr error
}

// Duration of the window.
func (f FailureWindow) Duration() time.Duration { return f.To.Sub(f.From) }

func (f FailureWindow) String() string {
	return fmt.Sprintf("%s - %s (%s): %d failed requests, first: %v",
		f.From.Format("15:04:05.000"), f.To.Format("15:04:05.000"), f.Duration(), f.Failures, f.FirstErr)
}

// APIRecord is what an API loop saw.
type APIRecord struct {
	Requests []APIRequest
}

// Windows are the runs of failed requests, in order.
func (r *APIRecord) Windows() []FailureWindow {
	var out []FailureWindow
	var cur *FailureWindow
	for _, q := range r.Requests {
		if errors.Is(q.Err, ErrNoAnswerYet) {
			continue
		}
		switch {
		case q.Err != nil && cur == nil:
			cur = &FailureWindow{From: q.Start, To: q.End, Failures: 1, FirstErr: q.Err}
		case q.Err != nil:
			cur.To = q.End
			cur.Failures++
		case cur != nil:
			cur.To = q.Start
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// Longest is the longest failure window (zero if every request succeeded).
func (r *APIRecord) Longest() FailureWindow {
	var longest FailureWindow
	for _, w := range r.Windows() {
		if w.Duration() > longest.Duration() {
			longest = w
		}
	}
	return longest
}

// LongestWithoutAnswer is the longest time between the ends of two
// successful requests in a row: how long a client went without a fresh
// answer, failures and slow requests alike. client-go, as kubectl, retries
// a GET whose connection was reset, so a fault can show as one slow
// request and no failure at all. An outage still going on when the loop
// stopped counts up to the end of its last request (at least that long),
// and one with no success at all from the start of the first.
func (r *APIRecord) LongestWithoutAnswer() time.Duration {
	if len(r.Requests) == 0 {
		return 0
	}
	var longest time.Duration
	last := r.Requests[0].Start
	for _, q := range r.Requests {
		if q.Err == nil {
			longest = max(longest, q.End.Sub(last))
			last = q.End
		}
	}
	if end := r.Requests[len(r.Requests)-1]; end.Err != nil {
		longest = max(longest, end.End.Sub(last))
	}
	return longest
}

// Failed counts the failed requests (not one still waiting for its answer
// when the loop stopped).
func (r *APIRecord) Failed() int {
	n := 0
	for _, q := range r.Requests {
		if q.Err != nil && !errors.Is(q.Err, ErrNoAnswerYet) {
			n++
		}
	}
	return n
}

// AnsweredSince reports whether a request that started at or after t has
// been answered.
func (r *APIRecord) AnsweredSince(t time.Time) bool {
	for _, q := range r.Requests {
		if q.Err == nil && !q.Start.Before(t) {
			return true
		}
	}
	return false
}

// APILoop lists the Nodes through the API server of kubeconfig (a VIP's)
// from the client's namespace, one request after the other at most every
// interval, as `kubectl get nodes` in a loop, until Stop or ctx ends.
type APILoop struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	rec    APIRecord
}

// APILoop starts a loop with the defaults (APIEvery, APITimeout).
func (cp *ControlPlane) APILoop(ctx context.Context, kubeconfig string) (*APILoop, error) {
	return cp.APILoopWith(ctx, kubeconfig, APIEvery, APITimeout)
}

// APILoopWith starts a loop with its own interval and request timeout.
func (cp *ControlPlane) APILoopWith(ctx context.Context, kubeconfig string, every, timeout time.Duration) (*APILoop, error) {
	return StartAPILoop(ctx, cp.Client.Netns, kubeconfig, every, timeout)
}

// StartAPILoop starts a loop from the network namespace netns (a client
// host of any harness, the real cluster's too).
func StartAPILoop(ctx context.Context, netns, kubeconfig string, every, timeout time.Duration) (*APILoop, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	cfg.Timeout = timeout
	cfg.Dial = DialerIn(netns, APIDialTimeout)
	cfg.QPS, cfg.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	l := &APILoop{done: make(chan struct{})}
	ctx, l.cancel = context.WithCancel(ctx)
	go l.run(ctx, client, every)
	return l, nil
}

func (l *APILoop) run(ctx context.Context, client kubernetes.Interface, every time.Duration) {
	defer close(l.done)
	for {
		q := APIRequest{Start: time.Now()}
		_, q.Err = client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		q.End = time.Now()
		if ctx.Err() != nil {
			// Cut short by Stop: unanswered so far, which counts.
			q.Err = ErrNoAnswerYet
			l.mu.Lock()
			l.rec.Requests = append(l.rec.Requests, q)
			l.mu.Unlock()
			return
		}
		l.mu.Lock()
		l.rec.Requests = append(l.rec.Requests, q)
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(q.Start.Add(every))):
		}
	}
}

// Stop ends the loop and returns its record.
func (l *APILoop) Stop() *APIRecord {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return &APIRecord{Requests: append([]APIRequest(nil), l.rec.Requests...)}
}

// WaitAnswerSince waits, at most within, until a request that started at
// or after t has been answered: a trial that ends the loop sooner would
// not see how long a client waits on a request the old owner had taken.
func (l *APILoop) WaitAnswerSince(t time.Time, within time.Duration) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		if l.Snapshot().AnsweredSince(t) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// Snapshot returns the record so far, the loop going on.
func (l *APILoop) Snapshot() *APIRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &APIRecord{Requests: append([]APIRequest(nil), l.rec.Requests...)}
}
