package images

import (
	"context"
	"slices"
	"strings"
)

// HeraldRepository is the repository of Herald's image, the chart's default
// image.repository (images_test.go checks it): installed with its default
// values, the chart runs the image BuildHerald wrote, without a registry.
const HeraldRepository = "ghcr.io/heraldlb/herald"

// HeraldRef is the reference of Herald's image with tag.
func HeraldRef(tag string) string { return HeraldRepository + ":" + tag }

// heraldPrograms are the binaries install/image/Containerfile builds and
// copies into /usr/bin/, and heraldEntrypoint its ENTRYPOINT: the image
// must run as the published one does (images_test.go compares them).
var heraldPrograms = []program{"./cmd/herald-agent", "./cmd/herald-dbg", "./cmd/herald-ipam"}

const heraldEntrypoint program = "./cmd/herald-agent"

// BuildHerald builds Herald's image from the repository at repoRoot into
// outDir: herald-agent, herald-dbg and herald-ipam in /usr/bin/, entrypoint
// herald-agent, as install/image/Containerfile builds it (without its
// distroless base: the binaries are static and read nothing of it).
//
// The image is tagged HeraldRef(appVersion), the chart's appVersion
// (AppVersion), and HeraldRef of every extra tag: an upgrade test can
// load the same binaries under a tag the installed release does not use.
// The tarball is named after the tags (herald-0.1.0.tar,
// herald-0.1.0+next.tar), so builds with other tags do not overwrite it.
func BuildHerald(ctx context.Context, repoRoot, outDir string, tags ...string) (Built, error) {
	appVersion, err := AppVersion(repoRoot)
	if err != nil {
		return Built{}, err
	}
	all := []string{appVersion}
	for _, t := range tags {
		if !slices.Contains(all, t) {
			all = append(all, t)
		}
	}
	refs := make([]string, len(all))
	for i, t := range all {
		refs[i] = HeraldRef(t)
	}
	// '+' cannot be part of a tag: the name is unambiguous.
	file := "herald-" + strings.Join(all, "+") + ".tar"
	return buildImage(ctx, repoRoot, outDir, file, refs, heraldEntrypoint, heraldPrograms...)
}
