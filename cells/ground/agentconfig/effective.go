package agentconfig

import (
	"sort"
	"strings"
	"sync"
)

// Effective is the configuration the agent runs with after flags, the
// ConfigMap (--config-dir) and defaults were combined: what
// `herald-dbg config` prints.
type Effective struct {
	mu     sync.Mutex
	values map[string]string
}

// Set records every option's final value, by flag name.
func (e *Effective) Set(values map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.values = values
}

// Values returns a copy of the options, by flag name.
func (e *Effective) Values() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]string, len(e.values))
	for k, v := range e.values {
		out[k] = v
	}
	return out
}

// DisplayName turns a flag name into the CamelCase name configuration dumps
// use (enable-l2-announcements → EnableL2Announcements), so that
// `herald-dbg config | grep EnableL2Announcements` works as users expect.
func DisplayName(flag string) string {
	var b strings.Builder
	for _, part := range strings.Split(flag, "-") {
		if up, ok := acronyms[part]; ok {
			b.WriteString(up)
			continue
		}
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

var acronyms = map[string]string{
	"ipv4": "IPv4", "ipv6": "IPv6", "l2": "L2", "lb": "LB", "ipam": "IPAM", "bgp": "BGP",
	"k8s": "K8s", "qps": "QPS", "bpf": "BPF", "dbg": "Dbg", "addr": "Addr", "ip": "IP", "ips": "IPs",
}

// SortedNames returns the flag names in display order.
func SortedNames(values map[string]string) []string {
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return DisplayName(names[i]) < DisplayName(names[j]) })
	return names
}
