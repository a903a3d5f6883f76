// Package v1 is the protocol between the CNI IPAM plugin herald-ipam and
// the agent on the same node: JSON over HTTP on a unix socket. The plugin
// is a thin client; every decision (pool, address, journal) is the agent's.
//
//	POST /v1/add     AddRequest   -> 200 AddResponse
//	POST /v1/del     DelRequest   -> 200 {}     (idempotent)
//	POST /v1/check   CheckRequest -> 200 {}
//	POST /v1/gc      GCRequest    -> 200 {}
//	GET  /v1/status               -> 200 StatusResponse
//
// Any other status carries an Error, whose Code is a CNI error code: the
// plugin passes it on to the runtime as is.
//
// The plugin sends one HTTP/1.0 request per connection and reads the
// answer up to its Content-Length or the end of the connection, so the
// agent answers HTTP/1.0 (net/http's server does: no chunking, and it
// closes the connection after the answer).
package v1

// DefaultSocket is where the agent serves the protocol (ipam-socket) and
// where the plugin looks for it unless its configuration says otherwise.
const DefaultSocket = "/var/run/herald/ipam.sock"

// DefaultStateDir holds what the plugin must not lose while the agent is
// down: DELs to replay (ipam-state-dir; the agent keeps its journal there).
const DefaultStateDir = "/var/lib/herald/ipam"

// PendingDelDir is the subdirectory of the state directory where the plugin
// queues a DEL it could not deliver; the agent replays and removes them.
const PendingDelDir = "pending-del"

// Paths of the protocol.
const (
	PathAdd    = "/v1/add"
	PathDel    = "/v1/del"
	PathCheck  = "/v1/check"
	PathGC     = "/v1/gc"
	PathStatus = "/v1/status"
)

// Attachment identifies one interface of one container: the key of every
// allocation (CNI's "attachment").
type Attachment struct {
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifName"`
}

// PodRef is the Pod the container belongs to, from CNI_ARGS
// (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID).
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
}

// AddRequest asks for the addresses of one attachment.
type AddRequest struct {
	Attachment
	Netns   string `json:"netns"`
	Network string `json:"network"` // the CNI network name
	Pod     PodRef `json:"pod"`
	// Bridge is the main plugin's bridge (the bridge plugin's "bridge"
	// key), empty for main plugins without one. A node holds several pod
	// CIDRs (pools, and more CIDRs as it grows) while the bridge plugin
	// puts at most one IPv4 gateway on its bridge: the agent puts each
	// CIDR's gateway on the bridge itself (the network uses
	// "isGateway": false).
	Bridge string `json:"bridge,omitempty"`
}

// IPConfig is one address given to the attachment.
type IPConfig struct {
	Address string `json:"address"` // with the prefix length of its node CIDR, e.g. 10.20.1.7/24
	Gateway string `json:"gateway"`
	Pool    string `json:"pool"`
}

// Route is a route for the attachment.
type Route struct {
	Dst string `json:"dst"`
	GW  string `json:"gw,omitempty"`
}

// AddResponse is the result of an ADD. An ADD repeated for the same
// attachment returns the same addresses.
type AddResponse struct {
	IPs    []IPConfig `json:"ips"`
	Routes []Route    `json:"routes,omitempty"`
}

// DelRequest releases the addresses of one attachment.
type DelRequest struct {
	Attachment
	Pod PodRef `json:"pod"`
}

// CheckRequest asks whether the attachment still holds these addresses.
type CheckRequest struct {
	Attachment
	Pod PodRef   `json:"pod"`
	IPs []string `json:"ips"` // with prefix length, as returned by ADD
}

// GCRequest lists the attachments the runtime still knows
// (cni.dev/valid-attachments); the agent releases every other allocation of
// the network.
type GCRequest struct {
	Network          string       `json:"network"`
	ValidAttachments []Attachment `json:"validAttachments"`
}

// StatusResponse says whether ADDs can succeed: the node has a CIDR of the
// default pool for every enabled family.
type StatusResponse struct {
	Ready   bool   `json:"ready"`
	Message string `json:"message,omitempty"`
}

// Error is the body of any non-200 answer.
type Error struct {
	Code    uint   `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details,omitempty"`
}

// CNI error codes the agent uses (CNI spec, "Error codes"); 100 and up are
// the plugin's own.
const (
	CodeInvalidEnvironment = 4   // missing CNI_ARGS (pod namespace or name)
	CodeIOFailure          = 5   // journal cannot be written
	CodeInvalidRequest     = 7   // malformed request
	CodeTryAgainLater      = 11  // the agent is not ready or waits for a CIDR
	CodeUnknownPool        = 100 // the pod asks for a pool that does not exist
	CodePoolExhausted      = 101 // no address left and no CIDR to be had
	CodeBadAnnotation      = 102 // a pool annotation that cannot be used
	CodePoolConflict       = 103 // no address left, and the pool overlaps an older one: it gets no CIDR
	CodePoolDeleting       = 104 // the pool is being deleted: no new pod gets an address of it
	CodePoolMaskSize       = 105 // no address left, and the pool's maskSize leaves no address for pods in a node CIDR
)
