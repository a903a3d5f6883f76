package images

import "context"

// PauseRef is the pod sandbox ("pause") image: the runtimes' sandbox_image
// (containerd's CRI setting, realcluster.Options.SandboxImage) must name it,
// since nothing can be pulled. It takes the name of Kubernetes' own pause
// image, so configurations written for that one find ours.
const PauseRef = "registry.k8s.io/pause:3.10"

// pauseProgram is the sandbox's program (pause/): it holds the pod's
// namespaces open and does nothing else.
const pauseProgram program = "./test/realcluster/images/pause"

// BuildPause builds the sandbox image, tagged PauseRef, from the
// repository at repoRoot into outDir (pause.tar): /usr/bin/pause, its
// entrypoint.
func BuildPause(ctx context.Context, repoRoot, outDir string) (Built, error) {
	return buildImage(ctx, repoRoot, outDir, "pause.tar", []string{PauseRef}, pauseProgram, pauseProgram)
}
