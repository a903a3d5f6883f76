#!/usr/bin/env bash
# Keeps the install artefacts in step with their sources:
#   install/helm/herald/crds/*.yaml   copies of install/crds/*.yaml (helm installs them
#                                     before the templates)
#   install/kubernetes/crds/*.yaml    the same copies, for `kubectl apply`
#   install/kubernetes/herald.yaml    the chart install/helm/herald rendered with its default
#                                     values (release "herald", namespace kube-system), as
#                                     `helm template` would, by install/helm/render
# No helm binary and no network are needed (beyond the Go module cache). The output depends
# only on the files in the repository. test/install fails when any of these files is stale.
#
#   hack/manifests.sh          (make manifests)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}

shopt -s nullglob
crds=(install/crds/*.yaml)
((${#crds[@]} > 0)) || { echo "manifests: no CRDs in install/crds (run make generate)" >&2; exit 1; }

echo ">> CRDs -> install/helm/herald/crds, install/kubernetes/crds"
for dir in install/helm/herald/crds install/kubernetes/crds; do
	mkdir -p "$dir"
	# Drop copies of CRDs that no longer exist, then copy the current ones.
	rm -f "$dir"/*.yaml
	cp "${crds[@]}" "$dir"/
done

echo ">> install/helm/herald -> install/kubernetes/herald.yaml"
"$GO" run ./install/helm/render \
	-chart install/helm/herald \
	-o install/kubernetes/herald.yaml
echo ">> done"
