package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// auditPolicy logs every request once when it is received (metadata only),
// and once when it completes (for the code).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["ResponseStarted"]
rules:
- level: Metadata
`

// withAudit is the kube-apiserver command line argv with its audit log
// sent to path under policy (replacing the audit flags of an earlier
// cycle).
func withAudit(argv []string, policy, path string) []string {
	var out []string
	for _, a := range argv {
		if !strings.HasPrefix(a, "--audit-") {
			out = append(out, a)
		}
	}
	return append(out, "--audit-policy-file="+policy, "--audit-log-path="+path, "--audit-log-mode=blocking")
}

// request is one agent request the API server received.
type request struct {
	at   time.Time
	kind string // "VERB resource", "GET /readyz"
	code int    // 0 when it had not completed when the log was read
}

type auditEvent struct {
	AuditID                  string    `json:"auditID"`
	Stage                    string    `json:"stage"`
	Verb                     string    `json:"verb"`
	RequestURI               string    `json:"requestURI"`
	UserAgent                string    `json:"userAgent"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	ObjectRef                *struct {
		Resource string `json:"resource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// readAudit returns the agents' requests received in [from, to), oldest
// first.
func readAudit(path string, from, to time.Time) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byID := map[string]*request{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !strings.HasPrefix(ev.UserAgent, "herald-agent") || ev.RequestReceivedTimestamp.Before(from) || !ev.RequestReceivedTimestamp.Before(to) {
			continue
		}
		r, ok := byID[ev.AuditID]
		if !ok {
			r = &request{at: ev.RequestReceivedTimestamp, kind: kindOf(ev)}
			byID[ev.AuditID] = r
		}
		if ev.Stage == "ResponseComplete" && ev.ResponseStatus != nil {
			r.code = ev.ResponseStatus.Code
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]request, 0, len(byID))
	for _, r := range byID {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out, nil
}

func kindOf(ev auditEvent) string {
	verb := strings.ToUpper(ev.Verb)
	if ev.ObjectRef == nil || ev.ObjectRef.Resource == "" {
		path, _, _ := strings.Cut(ev.RequestURI, "?")
		return verb + " " + path
	}
	return verb + " " + ev.ObjectRef.Resource
}

// renewal reports whether r is the leader renewing its Lease: it does that
// every retry period whatever happened, so it is no part of reconnecting.
func renewal(r request) bool { return r.kind == "UPDATE leases" }

// printCycles prints one build's cycles and its requests by kind.
func printCycles(name string, cs []cycle, window time.Duration) {
	fmt.Printf("\n== %s\n", name)
	fmt.Printf("%-6s %11s %14s %9s %13s %10s %9s %9s %9s\n", "cycle", "->healthy", "->Service IP", "requests", "w/o renewals", "peak/1s", "first", "last", "Degraded")
	kinds := map[string]int{}
	var healthy, address []float64
	for i, c := range cs {
		var other []request
		for _, r := range c.requests {
			k := r.kind
			if r.code != 0 && (r.code < 200 || r.code > 299) {
				k += fmt.Sprintf(" %d", r.code)
			}
			kinds[k]++
			if !renewal(r) {
				other = append(other, r)
			}
		}
		first, last := "-", "-"
		if len(other) > 0 {
			first = fmtDur(other[0].at.Sub(c.ready))
			last = fmtDur(other[len(other)-1].at.Sub(c.ready))
		}
		fmt.Printf("%-6d %11s %14s %9d %13d %10d %9s %9s %9v\n", i+1, fmtDur(c.healthy), fmtDur(c.address), len(c.requests), len(other), peak(other), first, last, c.degraded)
		healthy = append(healthy, c.healthy.Seconds())
		address = append(address, c.address.Seconds())
	}
	fmt.Printf("median: ->healthy %.2fs, ->Service IP %.2fs\n", median(healthy), median(address))
	fmt.Printf("(times relative to the API server's /readyz OK; requests: the agents', received in the first %s after it started;\n", window)
	fmt.Printf(" peak, first, last: of those other than the leader's Lease renewals)\n")
	fmt.Printf("agent requests over all cycles, by kind:\n")
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Printf("  %-50s %5d\n", k, kinds[k])
	}
}

// peak is the most requests received within one second.
func peak(rs []request) int {
	best, j := 0, 0
	for i := range rs {
		for rs[i].at.Sub(rs[j].at) >= time.Second {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
