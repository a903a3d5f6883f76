package elector

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/cilium/hive/script"
	"github.com/cilium/hive/script/scripttest"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/tables"
)

// TestDecideScript runs the scenarios in testdata/decide/*.txtar: one
// node's view of the protocol (its members, the candidates, the
// announcement Leases, its clock), built up line by line, then what the
// pure rules make of it (judge, the fence, the rejoin grace, decide),
// compared with the expected outcome. No hive: the rules are functions.
func TestDecideScript(t *testing.T) {
	scripttest.Test(t, context.Background(),
		func(testing.TB, []string) *script.Engine {
			cmds := newProtocolWorld().commands()
			maps.Insert(cmds, maps.All(script.DefaultCmds()))
			return &script.Engine{Cmds: cmds}
		}, nil, "testdata/decide/*.txtar")
}

// protocolWorld is what one node knows, as the elector assembles it for
// a decision round (round, evidence), but set by the scenario.
type protocolWorld struct {
	t0, now time.Time
	self    string
	fence   fence
	terms   int  // terms started so far, for their names (t1, t2, ...)
	mayMove bool // from the last standing
	apiUp   bool // Lease writes can be tried
	members map[string]*tables.L2Member
	groups  map[string]*tables.L2Candidate
	records map[string]holding
	// takeovers: the takeover records, by the holder/term they take from.
	takeovers map[string]takeoverRecord
	renewed   map[string]bool
	// withdrawn: the groups whose entries are out of the responder.
	withdrawn map[string]bool
	took      map[string]string // carried from round to round, as the elector does
	seen      termsSeen         // the members' terms as the member command set them
	last      plan
}

func newProtocolWorld() *protocolWorld {
	w := &protocolWorld{t0: time.Unix(1000, 0), apiUp: true}
	w.now = w.t0
	w.reset("node1")
	return w
}

// reset makes name this node, before its first term.
func (w *protocolWorld) reset(name string) {
	w.self, w.terms, w.mayMove, w.took = name, 0, false, map[string]string{}
	w.fence = fence{newTerm: func() string { w.terms++; return "t" + strconv.Itoa(w.terms) }}
	if w.members == nil {
		w.members, w.groups, w.records = map[string]*tables.L2Member{}, map[string]*tables.L2Candidate{}, map[string]holding{}
		w.renewed, w.withdrawn, w.takeovers = map[string]bool{}, map[string]bool{}, map[string]takeoverRecord{}
		w.seen = termsSeen{}
	}
}

// at parses a time on the scenario's clock: a duration since its start
// ("1.5s"), or "-" for none (the zero time).
func (w *protocolWorld) at(s string) (time.Time, error) {
	if s == "-" || s == "" {
		return time.Time{}, nil
	}
	d, err := time.ParseDuration(s)
	return w.t0.Add(d), err
}

func (w *protocolWorld) commands() map[string]script.Cmd {
	return map[string]script.Cmd{
		"self":      w.cmd("this node (a fresh start: no term)", "node", 1, 1, w.selfCmd),
		"clock":     w.cmd("set the clock: a duration since the scenario's start", "duration", 1, 1, w.clockCmd),
		"api":       w.cmd("whether Lease writes can be tried", "up|down", 1, 1, w.apiCmd),
		"member":    w.memberCmd(),
		"group":     w.cmd("a group of Services and the nodes that may announce it (none: gone)", "group nodes...", 1, -1, w.groupCmd),
		"lease":     w.cmd("a group's announcement Lease (no holder: gone)", "group [holder term version]", 1, 4, w.leaseCmd),
		"takeover":  w.cmd("the takeover record of holder/term (no entries: gone)", "holder/term [version group=node/term...]", 1, -1, w.takeoverCmd),
		"renewed":   w.cmd("the groups whose Lease its holder renews (none: no group)", "groups...", 0, -1, w.setCmd(&w.renewed)),
		"withdrawn": w.cmd("the groups whose entries are out of the responder", "groups...", 0, -1, w.setCmd(&w.withdrawn)),
		"standing":  w.standingCmd(),
		"decide":    w.cmd("decide a round; print each group's outcome, the writes and the unrecorded takeovers", "", 0, 0, w.decideCmd),
		"land":      w.cmd("the last round's writes reach the API server: each one applies if the Lease still has its version", "", 0, 0, w.landCmd),
	}
}

// cmd makes a command of f, which gets between min and max arguments
// (max -1: any number) and may print.
func (w *protocolWorld) cmd(summary, args string, min, max int, f func(s *script.State, args []string) (string, error)) script.Cmd {
	return script.Command(script.CmdUsage{Summary: summary, Args: args},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) < min || (max >= 0 && len(args) > max) {
				return nil, script.ErrUsage
			}
			out, err := f(s, args)
			if err != nil {
				return nil, err
			}
			return func(*script.State) (string, string, error) { return out, "", nil }, nil
		})
}

func (w *protocolWorld) selfCmd(_ *script.State, args []string) (string, error) {
	w.reset(args[0])
	return "", nil
}

func (w *protocolWorld) clockCmd(_ *script.State, args []string) (string, error) {
	t, err := w.at(args[0])
	w.now = t
	return "", err
}

func (w *protocolWorld) apiCmd(_ *script.State, args []string) (string, error) {
	switch args[0] {
	case "up", "down":
		w.apiUp = args[0] == "up"
		return "", nil
	}
	return "", script.ErrUsage
}

// memberCmd: a member as the failure detector reports it. This node's own
// row carries the fence's term.
func (w *protocolWorld) memberCmd() script.Cmd {
	return script.Command(script.CmdUsage{
		Summary: "a member, as the failure detector sees it",
		Args:    "node alive|suspect|dead|left [term]",
		Flags: func(fs *pflag.FlagSet) {
			fs.String("since", "0s", "when this node saw it enter its state")
			fs.StringSlice("took", nil, "the takeovers it announces: group=holder/term; *=holder/term, the record alone (an agent before per-group claims); *, more than it can list")
		},
	}, func(s *script.State, args ...string) (script.WaitFunc, error) {
		if len(args) < 2 || len(args) > 3 {
			return nil, script.ErrUsage
		}
		m := &tables.L2Member{Node: args[0], State: args[1]}
		if len(args) == 3 {
			m.Term = args[2]
		}
		since, _ := s.Flags.GetString("since")
		took, _ := s.Flags.GetStringSlice("took")
		var err error
		if m.Since, err = w.at(since); err != nil {
			return nil, err
		}
		for _, t := range took {
			group, record, ok := strings.Cut(t, "=")
			switch {
			case t == tookMany:
				m.TookOver = append(m.TookOver, tookMany)
			case !ok:
				return nil, fmt.Errorf("--took %q: want group=holder/term", t)
			case group == "*":
				m.TookOver = append(m.TookOver, record)
			default:
				m.TookOver = append(m.TookOver, claimKey(group, record))
			}
		}
		w.members[m.Node] = m
		w.seen.observe(m.Node, m.Term)
		return nil, nil
	})
}

func (w *protocolWorld) groupCmd(_ *script.State, args []string) (string, error) {
	if len(args) == 1 {
		delete(w.groups, args[0])
		return "", nil
	}
	w.groups[args[0]] = &tables.L2Candidate{Group: args[0], Nodes: args[1:]}
	return "", nil
}

func (w *protocolWorld) leaseCmd(_ *script.State, args []string) (string, error) {
	switch len(args) {
	case 1:
		delete(w.records, args[0])
	case 4:
		w.records[args[0]] = holding{holder: args[1], term: args[2], version: args[3]}
	default:
		return "", script.ErrUsage
	}
	return "", nil
}

func (w *protocolWorld) takeoverCmd(_ *script.State, args []string) (string, error) {
	if len(args) == 1 {
		delete(w.takeovers, args[0])
		return "", nil
	}
	t := takeoverRecord{name: "takeover " + args[0], version: args[1], owners: map[string]string{}}
	for _, e := range args[2:] {
		g, o, ok := strings.Cut(e, "=")
		if !ok {
			return "", fmt.Errorf("%q: want group=node/term", e)
		}
		t.owners[g] = o
	}
	w.takeovers[args[0]] = t
	return "", nil
}

func (w *protocolWorld) setCmd(set *map[string]bool) func(*script.State, []string) (string, error) {
	return func(_ *script.State, args []string) (string, error) {
		*set = map[string]bool{}
		for _, g := range args {
			(*set)[g] = true
		}
		return "", nil
	}
}

// standingCmd judges this node's standing at the clock, from the live
// members, and records it as evidence on the fence, as the elector's loop
// does; a new term voids the unrecorded takeovers of the old one.
func (w *protocolWorld) standingCmd() script.Cmd {
	return script.Command(script.CmdUsage{
		Summary: "judge this node's standing now and advance its fence; print the term, and why",
		Flags: func(fs *pflag.FlagSet) {
			fs.Int("universe", 0, "the cluster's size as far as this node knows it (0: the members)")
			fs.String("confirmed", "-", "until when a peer's echo confirms this node")
			fs.String("confirmed-since", "-", "since when the peers' echoes confirm it without a gap (-: as of now)")
			fs.String("lease", "-", "until when this node's own node Lease is renewed")
			fs.String("witness", "-", "until when this node's own witness record lets it answer (two nodes)")
			fs.Bool("peer-witness-gone", false, "the other node's witness record expired (two nodes)")
		},
	}, func(s *script.State, args ...string) (script.WaitFunc, error) {
		universe, _ := s.Flags.GetInt("universe")
		confirmed, _ := s.Flags.GetString("confirmed")
		lease, _ := s.Flags.GetString("lease")
		since, _ := s.Flags.GetString("confirmed-since")
		var c confirmation
		var err error
		if c.until, err = w.at(confirmed); err != nil {
			return nil, err
		}
		if c.since, err = w.at(since); err != nil {
			return nil, err
		}
		own, err := w.at(lease)
		if err != nil {
			return nil, err
		}
		wit, _ := s.Flags.GetString("witness")
		gone, _ := s.Flags.GetBool("peer-witness-gone")
		ownWitness, err := w.at(wit)
		if err != nil {
			return nil, err
		}
		live := 0
		for _, m := range w.members {
			if m.Live() {
				live++
			}
		}
		if universe == 0 {
			universe = len(w.members)
		}
		st := judge(max(live, 1), universe, c, own, witness{own: ownWitness, peersGone: gone})
		w.mayMove = st.mayMove
		out := "term " + dashIfEmpty(w.fence.term)
		if w.fence.advance(w.now, st.until, st.hold, st.since) {
			w.took = map[string]string{}
			out = "new term " + w.fence.term
		}
		out += fmt.Sprintf(", fresh %v, may move %v: %s\n", w.fence.valid(w.now), st.mayMove, st.why)
		return func(*script.State) (string, string, error) { return out, "", nil }, nil
	})
}

// view is the round's input, as round assembles it: a death seen before
// this node's term began counts only after the rejoin grace.
func (w *protocolWorld) view() view {
	v := view{self: w.self, term: w.fence.term, fresh: w.fence.valid(w.now), mayMove: w.mayMove, apiUp: w.apiUp,
		members: map[string]member{}, records: maps.Clone(w.records), takeovers: maps.Clone(w.takeovers),
		renewed: w.renewed, took: w.took, withdrawn: w.withdrawn, seen: w.seen.keys()}
	for _, m := range w.members {
		term := m.Term
		if m.Node == w.self {
			term = w.fence.term
		}
		live := m.Live() || !deathTrusted(m, w.fence.since, w.now)
		v.members[m.Node] = member{live: live, term: term, tookOver: m.TookOver}
	}
	for _, name := range slices.Sorted(maps.Keys(w.groups)) {
		v.groups = append(v.groups, w.groups[name])
	}
	return v
}

func (w *protocolWorld) decideCmd(*script.State, []string) (string, error) {
	v := w.view()
	p := decide(v)
	w.took, w.last = p.took, p

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Group\tOwner\tHolder\tDoes\tWhy")
	for _, g := range v.groups {
		d := p.decisions[g.Group]
		does := "-"
		switch {
		case d.announce && d.withdraw:
			does = "announce+withdraw"
		case d.announce:
			does = "announce"
		case d.withdraw:
			does = "withdraw"
		}
		holder := "-"
		if rec, ok := p.holdings[g.Group]; ok && rec.holder != "" {
			holder = rec.key()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Group, dashIfEmpty(d.owner), holder, does, d.why)
	}
	_ = tw.Flush()
	for _, wr := range p.writes {
		fmt.Fprintf(&b, "write %s: %s/%s if version %s\n", wr.group, dashIfEmpty(wr.holder), dashIfEmpty(wr.term), dashIfEmpty(wr.fromVersion))
	}
	for _, from := range slices.Sorted(maps.Keys(p.records)) {
		r := p.records[from]
		fmt.Fprintf(&b, "record %s if version %s:", from, dashIfEmpty(r.fromVersion))
		for _, g := range slices.Sorted(maps.Keys(r.owners)) {
			fmt.Fprintf(&b, " %s=%s", g, r.owners[g])
		}
		fmt.Fprintln(&b)
	}
	for _, g := range slices.Sorted(maps.Keys(p.took)) {
		fmt.Fprintf(&b, "took %s from %s\n", g, p.took[g])
	}
	return b.String(), nil
}

// landCmd applies the last round's writes to the Leases and the takeover
// records: conditional on the version they were computed from, as the API
// server does; a new version is one above the highest there is.
func (w *protocolWorld) landCmd(*script.State, []string) (string, error) {
	var b strings.Builder
	for _, from := range slices.Sorted(maps.Keys(w.last.records)) {
		r := w.last.records[from]
		cur, ok := w.takeovers[from]
		if (ok && cur.version != r.fromVersion) || (!ok && r.fromVersion != "") {
			fmt.Fprintf(&b, "conflict record %s: it has version %s, not %s\n", from, dashIfEmpty(cur.version), dashIfEmpty(r.fromVersion))
			continue
		}
		next := w.nextVersion()
		w.takeovers[from] = takeoverRecord{name: "takeover " + from, version: strconv.Itoa(next), owners: maps.Clone(r.owners)}
		fmt.Fprintf(&b, "landed record %s: %d groups, version %d\n", from, len(r.owners), next)
	}
	for _, wr := range w.last.writes {
		cur, ok := w.records[wr.group]
		if (ok && cur.version != wr.fromVersion) || (!ok && wr.fromVersion != "") {
			fmt.Fprintf(&b, "conflict %s: the Lease has version %s, not %s\n", wr.group, dashIfEmpty(cur.version), dashIfEmpty(wr.fromVersion))
			continue
		}
		next := w.nextVersion()
		w.records[wr.group] = holding{holder: wr.holder, term: wr.term, version: strconv.Itoa(next)}
		fmt.Fprintf(&b, "landed %s: %s, version %d\n", wr.group, w.records[wr.group].key(), next)
	}
	w.last.writes, w.last.records = nil, nil
	v := view{records: w.records, takeovers: w.takeovers}
	for _, from := range slices.Sorted(maps.Keys(v.unreferenced())) {
		delete(w.takeovers, from)
		fmt.Fprintf(&b, "deleted record %s: no Lease names it\n", from)
	}
	return b.String(), nil
}

// nextVersion is one above the highest version of any Lease or record.
func (w *protocolWorld) nextVersion() int {
	next := 0
	for _, r := range w.records {
		n, _ := strconv.Atoi(r.version)
		next = max(next, n)
	}
	for _, t := range w.takeovers {
		n, _ := strconv.Atoi(t.version)
		next = max(next, n)
	}
	return next + 1
}
