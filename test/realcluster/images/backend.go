package images

import "context"

// BackendRef is the image of the traffic tests' backends: Pods behind the
// Services whose LoadBalancer IPs the tests reach. localhost/ as registry:
// an image that exists only where it was imported.
const BackendRef = "localhost/herald-test/httpecho:v1"

// backendProgram is the backend: an HTTP server answering with its name
// and the addresses of the connection (-listen, -name).
const backendProgram program = "./test/netlab/cmd/httpecho"

// BuildBackend builds the backend image, tagged BackendRef, from the
// repository at repoRoot into outDir (httpecho.tar): /usr/bin/httpecho,
// its entrypoint (a Pod passes -listen and -name as args).
func BuildBackend(ctx context.Context, repoRoot, outDir string) (Built, error) {
	return buildImage(ctx, repoRoot, outDir, "httpecho.tar", []string{BackendRef}, backendProgram, backendProgram)
}
