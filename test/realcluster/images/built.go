package images

// Built is an image tarball a builder wrote.
type Built struct {
	// Path is the docker-archive tarball (the `docker save` layout, with
	// gzip-compressed layers), for Load or `ctr images import`.
	Path string
	// Refs are the image's references in the tarball, as containerd names
	// the image after importing it (e.g. ghcr.io/heraldlb/herald:0.1.0):
	// what a Pod's image field names.
	Refs []string
}
