package agentproc

import (
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Metrics is one scrape of an agent's /metrics.
type Metrics map[string]*dto.MetricFamily

// Scrape reads http://addr/metrics (--prometheus-serve-addr).
func Scrape(addr string) (Metrics, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /metrics: %s: %s", resp.Status, b)
	}
	var p expfmt.TextParser
	return p.TextToMetricFamilies(resp.Body)
}

// Metrics scrapes the agent (Options.MetricsAddr).
func (a *Agent) Metrics() (Metrics, error) {
	if a.MetricsAddr == "" {
		return nil, fmt.Errorf("agent %s serves no metrics (Options.MetricsAddr)", a.Name)
	}
	return Scrape(a.MetricsAddr)
}

// Value is the value of the first series of the metric that carries all
// the labels (a histogram's: its count of samples), and whether there is
// one.
func (m Metrics) Value(name string, labels map[string]string) (float64, bool) {
	f := m[name]
	if f == nil {
		return 0, false
	}
series:
	for _, s := range f.Metric {
		for k, v := range labels {
			found := false
			for _, lp := range s.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue series
			}
		}
		switch {
		case s.Gauge != nil:
			return s.Gauge.GetValue(), true
		case s.Counter != nil:
			return s.Counter.GetValue(), true
		case s.Histogram != nil:
			return float64(s.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}
