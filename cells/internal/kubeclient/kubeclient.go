// Package kubeclient names the Kubernetes clients the ground floor
// provides besides the rate-limited kubernetes.Interface every cell uses.
package kubeclient

import "k8s.io/client-go/kubernetes"

// Unthrottled talks protobuf like kubernetes.Interface, without its
// client-side rate limit (k8s-client-qps). It is for the writes of a
// cluster-wide singleton whose rate follows what users do, not the size of
// the cluster: the elected LB IPAM allocator's Service status writes, one
// per Service change, at most 16 in flight. Behind the rate limit, 1000 new
// Services waited 10 s for their IPs at the default 100 queries per second,
// although the API server had taken their creation in 3. The API server's
// own protection (API Priority and Fairness, on in every Kubernetes Herald
// supports) still applies to these writes; an agent-wide limit would
// protect it only from a burst that the users' own creations already made.
type Unthrottled struct{ kubernetes.Interface }
