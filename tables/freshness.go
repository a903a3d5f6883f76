package tables

import "context"

// Freshness is provided by the k8s-watch cell. CatchUp returns once the
// named tables (services, lb-pools, ...) hold at least what the API server
// held when it was called: every object at its listed resourceVersion or a
// newer one, and nothing the API server had already deleted.
//
// A reflected table is normally a few milliseconds behind the API server,
// but a watch that is reconnecting (after a partition, an API-server
// restart) can be minutes behind. A cell that starts acting as the
// cluster-wide leader calls CatchUp first, so that it never decides from a
// view older than its predecessor's last writes.
type Freshness interface {
	CatchUp(ctx context.Context, tables ...string) error
}
