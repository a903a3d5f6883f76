// Command pause is the pod sandbox of the real cluster's nodes (image
// images.PauseRef), in the place of Kubernetes' pause: the first
// container of every Pod, it holds the Pod's namespaces open while the
// other containers come and go, and does nothing else.
//
// As PID 1 of a Pod that shares its PID namespace, it inherits every
// orphaned process there and must reap them, or they stay zombies; so it
// waits for every child on SIGCHLD. SIGTERM and SIGINT end it with status
// 0. It handles them itself because the kernel delivers no signal to a
// namespace's PID 1 that PID 1 has no handler for: without one, a stop
// would always wait for SIGKILL.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	// Written once the handlers are in place: who reads it can signal.
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: started; warning: not PID 1, no orphans to reap")
	} else {
		fmt.Fprintln(os.Stderr, "pause: started")
	}
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: shutting down, got signal %v\n", sig)
		os.Exit(0)
	}
}

// reap waits for every child that has exited. One SIGCHLD may stand for
// several exits (signals of a kind do not queue), so it loops until none
// is left; a child exiting afterwards sends another.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if pid <= 0 || err != nil { // no exited child left, or none at all (ECHILD)
			return
		}
	}
}
