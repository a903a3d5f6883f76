package images

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
)

// CRINamespace is containerd's namespace of the CRI plugin: the only one
// the kubelet sees images in.
const CRINamespace = "k8s.io"

// Load imports an image tarball into the containerd listening on address
// (its gRPC socket), in CRINamespace, with the ctr binary ctrBinary:
// `ctr --address <address> -n k8s.io images import <tarball>`. ctr also
// unpacks the image into the default snapshotter, so a container can
// start from it at once. A failure returns ctr's stderr.
func Load(ctx context.Context, ctrBinary, address, tarball string) error {
	cmd := exec.CommandContext(ctx, ctrBinary, "--address", address, "-n", CRINamespace, "images", "import", tarball)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", tarball, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}
