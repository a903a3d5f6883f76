# Kubernetes versions of the development control plane. Sourced (not run) by
# ensure-tools.sh and cluster-up.sh; test/cluster has the same two as
# KubeVersion and OldestKubeVersion, and its tests check that they agree.
#
#   KUBE_VERSION         the current version: what cluster-up.sh starts unless
#                        HERALD_KUBE_VERSION says otherwise
#   KUBE_OLDEST_VERSION  the oldest Kubernetes Herald supports
#                        (Documentation/install.md); make test runs the CRD
#                        tests and an LB IPAM smoke test against it as well
#   KUBE_TOOLS           the Go module under install/dev each one is built
#                        from: every Kubernetes release needs its own
#                        dependency graph (see README.md)

KUBE_VERSION=v1.34.2
KUBE_OLDEST_VERSION=v1.31.14

declare -A KUBE_TOOLS=(
	[v1.34.2]=tools
	[v1.31.14]=tools-v1.31
)
