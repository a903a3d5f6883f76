package plugin

import (
	"fmt"

	"github.com/containernetworking/cni/pkg/types"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

// k8sArgs are the CNI_ARGS Kubernetes runtimes (containerd, CRI-O) pass,
// e.g. "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;
// K8S_POD_INFRA_CONTAINER_ID=4f3c...;K8S_POD_UID=6b1e...". The field names
// are the keys: types.LoadArgs matches them by reflection.
//
// Any other key is an error unless IgnoreUnknown is 1 or true, as in
// host-local and every plugin built on types.CommonArgs; the runtimes above
// always set it.
type k8sArgs struct {
	types.CommonArgs
	K8S_POD_NAMESPACE types.UnmarshallableString
	K8S_POD_NAME      types.UnmarshallableString
	K8S_POD_UID       types.UnmarshallableString
	// Known so that it is no error without IgnoreUnknown; not used: the
	// container ID comes from CNI_CONTAINERID.
	K8S_POD_INFRA_CONTAINER_ID types.UnmarshallableString
}

// parsePod reads the Pod from CNI_ARGS. Errors are CNI error 4 (invalid
// environment variables: CNI_ARGS is one).
func parsePod(cniArgs string) (v1.PodRef, error) {
	var a k8sArgs
	if err := types.LoadArgs(cniArgs, &a); err != nil {
		return v1.PodRef{}, types.NewError(types.ErrInvalidEnvironmentVariables, "herald-ipam: cannot parse CNI_ARGS", err.Error())
	}
	return v1.PodRef{
		Namespace: string(a.K8S_POD_NAMESPACE),
		Name:      string(a.K8S_POD_NAME),
		UID:       string(a.K8S_POD_UID),
	}, nil
}

// requirePod is parsePod for ADD: the agent picks the pool from the Pod and
// its namespace, so both must be there.
func requirePod(cniArgs string) (v1.PodRef, error) {
	pod, err := parsePod(cniArgs)
	if err != nil {
		return pod, err
	}
	for _, a := range []struct{ key, val string }{
		{"K8S_POD_NAMESPACE", pod.Namespace},
		{"K8S_POD_NAME", pod.Name},
	} {
		if a.val == "" {
			return pod, types.NewError(types.ErrInvalidEnvironmentVariables,
				fmt.Sprintf("herald-ipam: CNI_ARGS has no %s", a.key),
				fmt.Sprintf("CNI_ARGS=%q", cniArgs))
		}
	}
	return pod, nil
}
