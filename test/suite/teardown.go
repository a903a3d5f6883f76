// Package suite holds what the integration suites' TestMain share.
package suite

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Teardown is a suite's cleanup: steps added as the suite sets up, run in
// reverse order once, at the end of the run or when the process is
// interrupted (SIGINT, SIGTERM), so that a Ctrl-C leaves no namespaces,
// mounts or processes behind.
type Teardown struct {
	mu    sync.Mutex
	steps []func()
}

// NewTeardown returns a Teardown that also runs on SIGINT and SIGTERM, and
// then exits the process with status 1; name prefixes the message.
func NewTeardown(name string) *Teardown {
	t := &Teardown{}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "%s: %v: cleaning up\n", name, sig)
		t.Run()
		os.Exit(1)
	}()
	return t
}

// Add registers a step.
func (t *Teardown) Add(step func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.steps = append(t.steps, step)
}

// Run runs the steps added so far, last first; later calls run only steps
// added since.
func (t *Teardown) Run() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.steps) - 1; i >= 0; i-- {
		t.steps[i]()
	}
	t.steps = nil
}
