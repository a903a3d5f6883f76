package cpvip

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/heraldlb/herald/test/arpwatch"
)

// Reply is one answer to a probe: an ARP reply or a solicited Neighbor
// Advertisement, with the MAC it gives for the VIP.
type Reply struct {
	At  time.Time
	MAC string
}

// Probe is one request for the VIP (ARP who-has, or Neighbor
// Solicitation) and the replies that came back before the next one was
// sent (by capture order).
type Probe struct {
	Sent    time.Time
	Replies []Reply
}

// MACs are the distinct MACs that answered, in order of arrival.
func (p Probe) MACs() []string {
	var out []string
	for _, r := range p.Replies {
		if !slices.Contains(out, r.MAC) {
			out = append(out, r.MAC)
		}
	}
	return out
}

// Answer is who answered: "" nobody, a MAC, or several MACs joined by "+"
// (sorted) for a double answer.
func (p Probe) Answer() string {
	m := p.MACs()
	slices.Sort(m)
	return strings.Join(m, "+")
}

// VIPRecord is what WatchVIP saw: every probe, in order.
type VIPRecord struct {
	VIP    netip.Addr
	Every  time.Duration
	Probes []Probe
	// Doubles are the probes answered by more than one MAC: the invariant
	// is that there are none.
	Doubles []arpwatch.Double
	// Err is why probing or capturing stopped early, if it did.
	Err error
}

// sentProbe is a request as the prober sent it: the capture position just
// before it (the capture does not see the client's own frames) and when.
type sentProbe struct {
	mark int
	at   time.Time
}

// seqReply is a reply with its capture position.
type seqReply struct {
	seq int
	Reply
}

// assign puts every reply into the window of the last request captured at
// or before it; replies before the first request are dropped (they answer
// an earlier one).
func assign(sent []sentProbe, replies []seqReply) []Probe {
	probes := make([]Probe, len(sent))
	for i, s := range sent {
		probes[i].Sent = s.at
	}
	for _, r := range replies {
		w := sort.Search(len(sent), func(i int) bool { return sent[i].mark > r.seq }) - 1
		if w >= 0 {
			probes[w].Replies = append(probes[w].Replies, r.Reply)
		}
	}
	return probes
}

// doubles lists the probes answered by more than one MAC, numbered from 1
// as arpwatch.DoubleAnswerList numbers them.
func doubles(probes []Probe) []arpwatch.Double {
	var out []arpwatch.Double
	for i, p := range probes {
		if m := p.MACs(); len(m) > 1 {
			out = append(out, arpwatch.Double{Request: i + 1, At: p.Replies[0].At, MACs: m})
		}
	}
	return out
}

// Span is a run of consecutive probes with the same Answer.
type Span struct {
	Answer   string    // "" nobody, a MAC, or MACs joined by "+"
	From, To time.Time // when its first and last probe were sent
	Probes   int
}

// AnsweredBy is who answered over time, as spans of consecutive probes.
func (r *VIPRecord) AnsweredBy() []Span {
	var spans []Span
	for _, p := range r.Probes {
		a := p.Answer()
		if n := len(spans); n > 0 && spans[n-1].Answer == a {
			spans[n-1].To = p.Sent
			spans[n-1].Probes++
			continue
		}
		spans = append(spans, Span{Answer: a, From: p.Sent, To: p.Sent, Probes: 1})
	}
	return spans
}

// Failover is the time from since until the first reply, arriving at or
// after since, from a MAC other than from (the owner before the fault);
// false if no other MAC answered.
func (r *VIPRecord) Failover(since time.Time, from string) (time.Duration, bool) {
	for _, p := range r.Probes {
		for _, rep := range p.Replies {
			if !rep.At.Before(since) && rep.MAC != from {
				return rep.At.Sub(since), true
			}
		}
	}
	return 0, false
}

// OwnerAt is the answer to the last probe sent at or before t that was
// answered ("" if none was).
func (r *VIPRecord) OwnerAt(t time.Time) string {
	owner := ""
	for _, p := range r.Probes {
		if p.Sent.After(t) {
			break
		}
		if a := p.Answer(); a != "" {
			owner = a
		}
	}
	return owner
}

// LongestSilence is the longest run of unanswered probes, from the first
// one's sending to the next answered one's.
func (r *VIPRecord) LongestSilence() time.Duration {
	var longest time.Duration
	var start time.Time
	for _, p := range r.Probes {
		switch {
		case len(p.Replies) == 0 && start.IsZero():
			start = p.Sent
		case len(p.Replies) > 0 && !start.IsZero():
			longest = max(longest, p.Sent.Sub(start))
			start = time.Time{}
		}
	}
	return longest
}

// Format describes the record in one line per span, naming MACs with
// name (e.g. ControlPlane.NodeByMAC; a MAC it gives "" for stays a MAC).
func (r *VIPRecord) Format(name func(mac string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d probes every %s, %d double answers", r.VIP, len(r.Probes), r.Every, len(r.Doubles))
	if r.Err != nil {
		fmt.Fprintf(&b, ", stopped early: %v", r.Err)
	}
	for _, s := range r.AnsweredBy() {
		who := "nobody"
		if s.Answer != "" {
			var names []string
			for _, m := range strings.Split(s.Answer, "+") {
				if n := name(m); n != "" {
					m = n + " (" + m + ")"
				}
				names = append(names, m)
			}
			who = strings.Join(names, " AND ")
		}
		fmt.Fprintf(&b, "\n  %s - %s: %d probes answered by %s", s.From.Format("15:04:05.000"), s.To.Format("15:04:05.000"), s.Probes, who)
	}
	for _, d := range r.Doubles {
		fmt.Fprintf(&b, "\n  %s", d)
	}
	return b.String()
}
