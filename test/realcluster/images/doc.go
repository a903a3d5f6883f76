// Package images builds the container images of the real cluster
// (package realcluster) offline: no Docker daemon, no registry, nothing
// pulled. Each image is one layer of static Go binaries built from this
// repository, assembled with go-containerregistry and written as a
// docker-archive tarball (the `docker save` layout) that
// `ctr -n k8s.io images import` loads into a node's containerd, where the
// kubelet finds it under its tag.
//
// Three images:
//   - Herald's, with the binaries and entrypoint of install/image/Containerfile
//     (images_test.go holds the two together), tagged as the chart deploys it
//     by default (HeraldRepository, the chart's appVersion) and with any
//     extra tags a test asks for;
//   - the pod sandbox image (PauseRef), a pause program of our own (pause/);
//   - a backend for traffic tests (BackendRef), test/netlab/cmd/httpecho.
//
// Builds are reproducible: the binaries are built with -trimpath and
// without VCS stamps, the layers' files have fixed owners, modes and
// times, and the image configs carry no build time. Nothing is cached in
// the work tree: every builder writes into the directory its caller gives,
// and the Go build cache does the rest.
package images
