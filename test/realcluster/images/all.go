package images

import "context"

// All are the images a real cluster needs.
type All struct {
	Herald, Pause, Backend Built
}

// Paths are the tarballs, to load into every node.
func (a All) Paths() []string {
	return []string{a.Herald.Path, a.Pause.Path, a.Backend.Path}
}

// BuildAll builds every image from the repository at repoRoot into outDir:
// BuildHerald (with heraldTags), BuildPause, BuildBackend. One after the
// other: each go build uses every core already.
func BuildAll(ctx context.Context, repoRoot, outDir string, heraldTags ...string) (All, error) {
	var a All
	var err error
	if a.Herald, err = BuildHerald(ctx, repoRoot, outDir, heraldTags...); err != nil {
		return All{}, err
	}
	if a.Pause, err = BuildPause(ctx, repoRoot, outDir); err != nil {
		return All{}, err
	}
	if a.Backend, err = BuildBackend(ctx, repoRoot, outDir); err != nil {
		return All{}, err
	}
	return a, nil
}
