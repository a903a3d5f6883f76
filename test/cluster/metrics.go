package cluster

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// RequestKey names a kind of request as kube-apiserver's
// apiserver_request_total labels it.
type RequestKey struct {
	Verb        string // LIST, GET, WATCH, CREATE, UPDATE, PATCH, APPLY, DELETE, ...
	Resource    string // e.g. "ciliumnodes"
	Subresource string // e.g. "status"; "" for the object itself
	Code        string // the response's status code, e.g. "200", "409"
}

// String is "VERB resource[/subresource]", followed by the code unless it
// is a success: "APPLY ciliumnodes/status 422".
func (k RequestKey) String() string {
	r := k.Resource
	if k.Subresource != "" {
		r += "/" + k.Subresource
	}
	s := k.Verb + " " + r
	if !strings.HasPrefix(k.Code, "2") {
		s += " " + k.Code
	}
	return s
}

// Write reports whether the request changes something (anything but GET,
// LIST and WATCH).
func (k RequestKey) Write() bool {
	switch k.Verb {
	case "GET", "LIST", "WATCH", "WATCHLIST", "CONNECT":
		return false
	}
	return true
}

// RequestCounts are request counts by kind.
type RequestCounts map[RequestKey]float64

// RequestCounts reads the API server's apiserver_request_total and sums it
// by verb, resource, subresource and response code. The counter covers every client,
// including the API server's own (its Lease, its endpoints): a benchmark
// takes a reading before and after a window in which nothing else it does
// talks to the API server, and compares with an idle window of the same
// length. Requests outside any resource (/metrics, /healthz) are left out.
func (c *Cluster) RequestCounts(ctx context.Context) (RequestCounts, error) {
	raw, err := c.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: scraping the API server's /metrics: %w", err)
	}
	return parseRequestTotals(string(raw))
}

var metricLabelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

func parseRequestTotals(text string) (RequestCounts, error) {
	out := RequestCounts{}
	found := false
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		found = true
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		labels := map[string]string{}
		for _, m := range metricLabelRE.FindAllStringSubmatch(line[:end], -1) {
			labels[m[1]] = m[2]
		}
		if labels["resource"] == "" {
			continue
		}
		fields := strings.Fields(line[end+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("cluster: parsing %q: %w", line, err)
		}
		out[RequestKey{Verb: labels["verb"], Resource: labels["resource"], Subresource: labels["subresource"], Code: labels["code"]}] += v
	}
	if !found {
		return nil, fmt.Errorf("cluster: no apiserver_request_total in the API server's /metrics")
	}
	return out, nil
}

// Sub returns the requests counted in c but not in before (an earlier
// reading), leaving out kinds with none.
func (c RequestCounts) Sub(before RequestCounts) RequestCounts {
	out := RequestCounts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Filter returns the counts of the kinds keep accepts.
func (c RequestCounts) Filter(keep func(RequestKey) bool) RequestCounts {
	out := RequestCounts{}
	for k, v := range c {
		if keep(k) {
			out[k] = v
		}
	}
	return out
}

// Total sums the counts.
func (c RequestCounts) Total() float64 {
	t := 0.0
	for _, v := range c {
		t += v
	}
	return t
}

// Keys returns the kinds, sorted by resource, subresource and verb.
func (c RequestCounts) Keys() []RequestKey {
	keys := make([]RequestKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		if a.Subresource != b.Subresource {
			return a.Subresource < b.Subresource
		}
		if a.Verb != b.Verb {
			return a.Verb < b.Verb
		}
		return a.Code < b.Code
	})
	return keys
}
