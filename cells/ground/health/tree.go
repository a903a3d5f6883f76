package health

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/hive/cell"
)

// tree is the root cell.Health: every scope's latest report, by full name.
type tree struct {
	mu      sync.Mutex
	scopes  map[string]*report
	started atomic.Bool
}

type report struct {
	level  cell.Level
	status string
	err    error
}

// scope is one module's (or job's) reporter.
type scope struct {
	t    *tree
	name string
}

func newRoot() (cell.Health, *tree) {
	t := &tree{scopes: map[string]*report{}}
	return &scope{t: t}, t
}

func (s *scope) set(level cell.Level, status string, err error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	s.t.scopes[s.name] = &report{level: level, status: status, err: err}
}

func (s *scope) OK(status string)                  { s.set(cell.StatusOK, status, nil) }
func (s *scope) Stopped(reason string)             { s.set(cell.StatusStopped, reason, nil) }
func (s *scope) Degraded(reason string, err error) { s.set(cell.StatusDegraded, reason, err) }

func (s *scope) NewScope(name string) cell.Health {
	full := name
	if s.name != "" {
		full = s.name + "." + name
	}
	return &scope{t: s.t, name: full}
}

func (s *scope) Close() {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	delete(s.t.scopes, s.name)
}

// snapshot renders every report, sorted, and whether any is degraded.
func (t *tree) snapshot() (lines []string, degraded bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, r := range t.scopes {
		line := fmt.Sprintf("%s: %s %s", name, r.level, r.status)
		if r.err != nil {
			line += ": " + r.err.Error()
		}
		lines = append(lines, strings.TrimSpace(line))
		if r.level == cell.StatusDegraded {
			degraded = true
		}
	}
	sort.Strings(lines)
	return lines, degraded
}
