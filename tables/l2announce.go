package tables

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"
)

// L2AnnounceTableName is the table of what this node answers ARP for.
const L2AnnounceTableName = "l2-announce"

// L2AnnounceEntry is one IP this node announces on one interface, and the
// Services that want it. Only the holder of the Services' lease has rows.
type L2AnnounceEntry struct {
	IP               netip.Addr `json:"ip"`
	NetworkInterface string     `json:"networkInterface"`
	Ifindex          int        `json:"ifindex"`
	// MAC is the interface's address: the one ARP replies carry.
	MAC     string   `json:"mac"`
	Origins []string `json:"origins"` // Service keys, sorted
	// Withdrawn: this node stops answering for the IP (hands it over,
	// gives its Lease up, or the IP is gone); the responder takes it out of
	// the map, Status done once it is out (Out). Only then may another
	// node answer, or the row go.
	Withdrawn bool `json:"withdrawn,omitempty"`

	Status reconciler.Status `json:"status"`
}

// Withdrawal is a copy of the entry marked withdrawn, for the responder
// to take out of its map.
func (e *L2AnnounceEntry) Withdrawal() *L2AnnounceEntry {
	c := *e
	c.Withdrawn, c.Status = true, reconciler.StatusPending()
	return &c
}

// Out reports whether the responder confirmed the entry out of its map.
func (e *L2AnnounceEntry) Out() bool {
	return e.Withdrawn && e.Status.Kind == reconciler.StatusKindDone
}

// HardwareAddr parses MAC.
func (e *L2AnnounceEntry) HardwareAddr() net.HardwareAddr {
	hw, _ := net.ParseMAC(e.MAC)
	return hw
}

func (e *L2AnnounceEntry) Clone() *L2AnnounceEntry {
	c := *e
	return &c
}

func (e *L2AnnounceEntry) GetStatus() reconciler.Status { return e.Status }

func (e *L2AnnounceEntry) SetStatus(s reconciler.Status) *L2AnnounceEntry {
	e.Status = s
	return e
}

func (e *L2AnnounceEntry) TableHeader() []string {
	return []string{"IP", "NetworkInterface", "Origins", "Withdrawn", "Status"}
}

func (e *L2AnnounceEntry) TableRow() []string {
	return []string{e.IP.String(), e.NetworkInterface, strings.Join(e.Origins, ","), fmt.Sprint(e.Withdrawn), e.Status.Kind.String()}
}

// L2AnnounceKey is the primary key: IP and interface.
type L2AnnounceKey struct {
	IP               netip.Addr
	NetworkInterface string
}

func (k L2AnnounceKey) Key() index.Key {
	return append(index.NetIPAddr(k.IP), []byte("|"+k.NetworkInterface)...)
}

var (
	// L2AnnounceKeyIndex is the primary index: (IP, NetworkInterface).
	L2AnnounceKeyIndex = statedb.Index[*L2AnnounceEntry, L2AnnounceKey]{
		Name: "key",
		FromObject: func(e *L2AnnounceEntry) index.KeySet {
			return index.NewKeySet(L2AnnounceKey{e.IP, e.NetworkInterface}.Key())
		},
		FromKey: L2AnnounceKey.Key,
		Unique:  true,
	}
	// L2AnnounceOriginIndex finds the entries a Service wants.
	L2AnnounceOriginIndex = statedb.Index[*L2AnnounceEntry, string]{
		Name: "origin",
		FromObject: func(e *L2AnnounceEntry) index.KeySet {
			return index.StringSlice(e.Origins)
		},
		FromKey:    index.String,
		FromString: index.FromString,
	}
)

// NewL2AnnounceTable creates the l2-announce table.
func NewL2AnnounceTable(db *statedb.DB) (statedb.RWTable[*L2AnnounceEntry], error) {
	return statedb.NewTable(db, L2AnnounceTableName, L2AnnounceKeyIndex, L2AnnounceOriginIndex)
}
