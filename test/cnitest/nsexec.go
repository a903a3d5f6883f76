package cnitest

import (
	"context"
	"fmt"
	"runtime"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/vishvananda/netns"
)

// nsExec is libcni's invoke.Exec with every plugin process started inside a
// network namespace: the node's. The plugins then see the node's devices
// and sysctls (the bridge and ip_forward go there) while the test process
// stays where it is; the file system is shared, so the agent's unix socket
// is reachable by its path.
type nsExec struct {
	netns string // path of the namespace
	raw   invoke.RawExec
}

func (e *nsExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) (out []byte, err error) {
	nerr := inNetns(e.netns, func() {
		out, err = e.raw.ExecPlugin(ctx, pluginPath, stdin, environ)
	})
	if nerr != nil {
		return nil, nerr
	}
	return out, err
}

func (e *nsExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}

func (e *nsExec) Decode(b []byte) (version.PluginInfo, error) {
	return (&version.PluginDecoder{}).Decode(b)
}

// inNetns runs fn on a thread that is in the network namespace at path.
//
// A new process starts in the namespace of the thread that forks it, and
// os/exec forks on the calling goroutine's thread, so fn's children start
// in the namespace. fn runs in its own goroutine, locked to its thread for
// the duration: the caller's goroutine never changes namespace, and no
// other goroutine is scheduled on the thread meanwhile. If the thread
// cannot return to its namespace, the goroutine ends still locked, and Go
// then ends the thread instead of reusing it.
func inNetns(path string, fn func()) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread() // nothing changed
			done <- fmt.Errorf("cnitest: current network namespace: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath(path)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("cnitest: network namespace %s: %w", path, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			done <- fmt.Errorf("cnitest: entering %s: %w", path, err) // stays locked: see above
			return
		}
		fn()
		if err := netns.Set(orig); err != nil {
			done <- fmt.Errorf("cnitest: leaving %s: %w", path, err) // stays locked
			return
		}
		runtime.UnlockOSThread()
		done <- nil
	}()
	return <-done
}
