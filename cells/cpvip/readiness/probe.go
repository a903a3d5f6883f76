package readiness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Config    cpvipconfig.Config
	Log       *slog.Logger
	DB        *statedb.DB
	Jobs      job.Group
	Readiness statedb.RWTable[*tables.ControlPlaneReadiness]
	Metrics   prometheus.Registerer `optional:"true"`
}

type prober struct {
	params
	client  *http.Client
	judge   judge
	probes  *prometheus.CounterVec
	ready   prometheus.Gauge
	last    string // the last probe's outcome, to log changes of it once
	started time.Time
	// forbiddenSince: when the API server began answering 403 in a row;
	// zero while it does not.
	forbiddenSince time.Time
	// unansweredSince: when the probes began getting no answer at all
	// (refused, timed out); zero while they get one. unansweredSaid: the
	// stretch has been logged.
	unansweredSince time.Time
	unansweredSaid  bool
}

func registerProber(p params) error {
	client, err := newClient(p.Config)
	if err != nil {
		return err
	}
	pr := newProber(p, client)
	if p.Metrics != nil {
		p.Metrics.MustRegister(pr.probes, pr.ready)
	}
	wtxn := p.DB.WriteTxn(p.Readiness)
	pr.started = time.Now()
	_, _, _ = p.Readiness.Insert(wtxn, &tables.ControlPlaneReadiness{Node: p.Config.Node(), Since: pr.started, Reason: "not probed yet"})
	wtxn.Commit()
	p.Jobs.Add(job.OneShot("probe", pr.run))
	return nil
}

func newProber(p params, client *http.Client) *prober {
	return &prober{params: p, client: client,
		judge: judge{failureThreshold: p.Config.ReadyzFailureThreshold, successThreshold: p.Config.ReadyzSuccessThreshold},
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_control_plane_readyz_probes_total",
			Help: "Probes of the local API server's readiness endpoint, by result (ok, not-ready, error)"}, []string{"result"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_control_plane_api_server_ready",
			Help: "1 while the local API server counts as ready (after the thresholds), else 0"}),
	}
}

// newClient is the probe's HTTP client: no credentials (the API server
// serves /readyz to anyone), the CA if one is given.
func newClient(c cpvipconfig.Config) (*http.Client, error) {
	tc := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // only the status code is read; see readyz-ca-file
	if c.ReadyzCAFile != "" {
		pem, err := os.ReadFile(c.ReadyzCAFile)
		if err != nil {
			return nil, fmt.Errorf("readyz-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("readyz-ca-file: %s holds no PEM certificate", c.ReadyzCAFile)
		}
		tc = &tls.Config{RootCAs: pool}
	}
	return &http.Client{Timeout: c.ReadyzTimeout, Transport: &http.Transport{TLSClientConfig: tc, MaxIdleConns: 1}}, nil
}

func (pr *prober) run(ctx context.Context, health cell.Health) error {
	tick := time.NewTicker(pr.Config.ReadyzPeriod)
	defer tick.Stop()
	for {
		ok, outcome := pr.probe(ctx)
		pr.record(ok, outcome, health)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// probe asks once: ready means 200.
func (pr *prober) probe(ctx context.Context) (ok bool, outcome string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pr.Config.ReadyzURL, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := pr.client.Do(req)
	if err != nil {
		pr.probes.WithLabelValues("error").Inc()
		hint := errorHint(err)
		if hint == "" {
			pr.unanswered(err, time.Now())
		}
		return false, err.Error() + hint
	}
	pr.unansweredSince, pr.unansweredSaid = time.Time{}, false
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		pr.forbiddenSince = time.Time{}
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		pr.probes.WithLabelValues("ok").Inc()
		return true, "ready"
	case resp.StatusCode == http.StatusForbidden:
		return false, pr.forbidden(resp.Status, time.Now())
	case wrongStatus(resp.StatusCode):
		pr.probes.WithLabelValues("error").Inc()
		return false, fmt.Sprintf("GET %s answered %s", pr.Config.ReadyzURL, resp.Status) + wrongURLHint
	}
	pr.probes.WithLabelValues("not-ready").Inc()
	return false, fmt.Sprintf("GET %s answered %s", pr.Config.ReadyzURL, resp.Status)
}

// forbidden judges a 403: an API server that is starting answers so until
// its roles let anonymous users read /readyz; one that does for longer
// than forbiddenGrace is taken for a wrong readyz-url.
func (pr *prober) forbidden(status string, now time.Time) string {
	if pr.forbiddenSince.IsZero() {
		pr.forbiddenSince = now
	}
	outcome := fmt.Sprintf("GET %s answered %s", pr.Config.ReadyzURL, status)
	if now.Sub(pr.forbiddenSince) < forbiddenGrace {
		pr.probes.WithLabelValues("not-ready").Inc()
		return outcome + " (as a starting API server does until its roles are in place)"
	}
	pr.probes.WithLabelValues("error").Inc()
	return outcome + wrongURLHint
}

// unanswered notes a probe that got no answer. A starting API server
// gives none for a while, so only a stretch longer than unansweredGrace
// is logged, once, at warning level: a node that has never been eligible
// has no change of eligibility to say it with, and a readyz-url with a
// wrong host or port looks exactly like this.
func (pr *prober) unanswered(err error, now time.Time) {
	if pr.unansweredSince.IsZero() {
		pr.unansweredSince = now
	}
	if pr.unansweredSaid || now.Sub(pr.unansweredSince) < unansweredGrace {
		return
	}
	pr.unansweredSaid = true
	pr.Log.Warn("The local API server has not answered the readiness probe for over "+unansweredGrace.String()+
		": is it running, and are readyz-url's host and port its own? This node is not eligible while it does not answer",
		"url", pr.Config.ReadyzURL, "since", pr.unansweredSince, "error", err)
}

// record applies the thresholds, and logs and publishes what changed.
func (pr *prober) record(ok bool, outcome string, health cell.Health) {
	changed := pr.judge.observe(ok)
	if outcome != pr.last {
		pr.Log.Debug("Readiness probe", "url", pr.Config.ReadyzURL, "outcome", outcome)
	}
	if !changed && outcome == pr.last {
		return
	}
	if hinted(outcome) && outcome != pr.last {
		// Said here, once: a node that was never eligible (a cold start,
		// the first node) has no change of eligibility to log it with.
		pr.Log.Warn("The readiness probe fails because of its settings, not the API server: this node is not eligible while it does",
			"url", pr.Config.ReadyzURL, "reason", outcome)
	}
	pr.last = outcome
	txn := pr.DB.WriteTxn(pr.Readiness)
	row, _, _ := pr.Readiness.Get(txn, tables.ControlPlaneReadinessNodeIndex.Query(pr.Config.Node()))
	next := *row
	next.Reason = outcome
	if changed {
		next.Eligible, next.Since = pr.judge.eligible, time.Now()
	}
	_, _, _ = pr.Readiness.Insert(txn, &next)
	txn.Commit()
	if !changed {
		return
	}
	if pr.judge.eligible {
		pr.ready.Set(1)
		// Health says the prober works, not that the API server is
		// ready: a liveness probe must not restart the agent for it.
		health.OK("local API server ready")
		pr.Log.Info("Local API server ready: this node may own the VIPs", "url", pr.Config.ReadyzURL,
			"success-threshold", pr.Config.ReadyzSuccessThreshold)
	} else {
		pr.ready.Set(0)
		health.OK("local API server not ready: " + outcome)
		pr.Log.Warn("Local API server not ready: this node gives the VIPs up", "url", pr.Config.ReadyzURL,
			"reason", outcome, "failure-threshold", pr.Config.ReadyzFailureThreshold)
	}
}
