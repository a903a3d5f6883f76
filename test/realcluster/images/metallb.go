package images

import (
	"fmt"
	"os"
	"path/filepath"
)

// MetalLB's images, for the takeover test: a cluster that runs MetalLB,
// as its users install it, before Herald takes over.

// MetalLBRef is the reference of MetalLB's image of program (controller or
// speaker) at version, as MetalLB's install manifest (metallb-native.yaml)
// names it: loaded under that name, the manifest runs unchanged, and the
// kubelet never pulls (a tagged image that is present is used as it is).
func MetalLBRef(program, version string) string {
	return fmt.Sprintf("quay.io/metallb/%s:%s", program, version)
}

// BuildMetalLB writes MetalLB's controller and speaker images of version
// into outDir (metallb-controller.tar, metallb-speaker.tar), from the
// binaries in binDir (hack/metallb.sh builds and caches them). Each holds
// its program at /<program>, its entrypoint, as MetalLB's Dockerfiles put
// it, without their distroless base (MetalLB reads no CA certificates,
// time zones or users).
func BuildMetalLB(binDir, version, outDir string) (controller, speaker Built, err error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Built{}, Built{}, err
	}
	build := func(program string) (Built, error) {
		ref := MetalLBRef(program, version)
		tags, err := parseRefs([]string{ref})
		if err != nil {
			return Built{}, err
		}
		tmp, err := os.MkdirTemp(outDir, ".build-")
		if err != nil {
			return Built{}, err
		}
		defer os.RemoveAll(tmp)
		out := filepath.Join(outDir, "metallb-"+program+".tar")
		err = writeImage(out, tmp, imageSpec{
			Refs:       tags,
			Files:      []layerFile{{Path: "/" + program, Src: filepath.Join(binDir, program)}},
			Entrypoint: []string{"/" + program},
			CreatedBy:  fmt.Sprintf("MetalLB %s ./%s (hack/metallb.sh) -> /%s", version, program, program),
		})
		if err != nil {
			return Built{}, fmt.Errorf("image %s: %w", ref, err)
		}
		return Built{Path: out, Refs: []string{ref}}, nil
	}
	if controller, err = build("controller"); err != nil {
		return Built{}, Built{}, err
	}
	if speaker, err = build("speaker"); err != nil {
		return Built{}, Built{}, err
	}
	return controller, speaker, nil
}
