package election

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// wireMessage is a beat or a grant as it travels between the nodes
// (JSON, in one encrypted memberlist packet). Every message carries the
// sender's configuration: nodes configured differently do not elect
// together, and say why.
type wireMessage struct {
	Beat  *Beat  `json:"b,omitempty"`
	Grant *Grant `json:"g,omitempty"`
	// VIPs and Peers are the sender's --vips and --peers, normalized.
	VIPs  []string `json:"v"`
	Peers []string `json:"p"`
}

func encode(m wireMessage) []byte {
	b, _ := json.Marshal(m)
	return b
}

func decode(b []byte) (wireMessage, error) {
	var m wireMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("unreadable message: %w", err)
	}
	if (m.Beat == nil) == (m.Grant == nil) {
		return m, fmt.Errorf("message is neither a beat nor a grant")
	}
	return m, nil
}

func (m wireMessage) from() string {
	if m.Beat != nil {
		return m.Beat.From
	}
	return m.Grant.From
}

// mismatch says how the sender's configuration differs from this node's,
// "" if it does not.
func mismatch(m wireMessage, vips, peers []string) string {
	var out []string
	if !slices.Equal(m.VIPs, vips) {
		out = append(out, fmt.Sprintf("vips %s here, %s there", strings.Join(vips, ","), strings.Join(m.VIPs, ",")))
	}
	if !slices.Equal(m.Peers, peers) {
		out = append(out, fmt.Sprintf("peers %s here, %s there", strings.Join(peers, ","), strings.Join(m.Peers, ",")))
	}
	return strings.Join(out, "; ")
}
